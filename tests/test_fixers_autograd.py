"""The fixes while autograd records: values, gradients and `.grad` of every leaf as the original.

[Where] selects with ``torch.where`` under autograd only where ``planning/gradients.py`` proves
the gradients exact (``_graphmend_where_grad``); elsewhere the ``if`` stays as written under
``if _graphmend_keeps_branch(h):``, which holds eager and while autograd records through what
the sides compute with (the break stays there, and the path not taken never runs in a graph
whose backward would send it a zero gradient), and the selection runs in its ``else``,
compiled without autograd or with frozen weights. Each case below
runs the original eagerly and the fixed code eagerly and compiled (``eager`` and
``aot_eager``), with inputs that take each branch and inputs holding inf and NaN, and compares
outputs and gradients. For the sites whose branch is kept in training, a fix made as if the
analysis allowed the selection shows the difference it avoids. [Trap] and
[Defer] are run under autograd as well.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from textwrap import dedent
from types import ModuleType
from typing import Any, Callable, Dict, List, Optional, Tuple

import pytest

torch = pytest.importorskip("torch")

from libcst.codemod import CodemodContext, TransformSuccess, transform_module  # noqa: E402
from test_fixers_dynamo import load, same  # noqa: E402

from fixers.fix_all import FixAll  # noqa: E402
from fixers.helpers import (  # noqa: E402
    DEFERRED, DRAW_BELOW, FIXED_HELPERS, INLINE_ONLY, KEEP, KEEPS_BRANCH,
)
from flake8_graphmend.engine import analyze_source  # noqa: E402
from flake8_graphmend.planning import where as where_planning  # noqa: E402
from flake8_graphmend.planning.where import Selection  # noqa: E402
from flake8_graphmend.verify.dynamo import probe  # noqa: E402

HEADER = """\
import logging

import torch
from torch import nn

logger = logging.getLogger("graphmend.autograd")


"""
INF, NAN = float("inf"), float("nan")
#: The test of the `if` that a fix keeps as written for eager code and autograd.
KEPT = f"if {KEEPS_BRANCH}("
#: Inputs that take either side of the cases' conditions, with inf and NaN on the way.
INPUTS = {
    "positive": [1.0, 2.0, 0.5, 3.0],
    "negative": [-1.0, -2.0, -0.5, -3.0],
    "mixed": [3.0, -0.5, 0.0, 1.0],
    "inf": [1.0, INF, -2.0, 0.5],
    "nan": [NAN, 1.0, 2.0, -1.0],
    "zero": [0.0, 0.0, 0.0, 0.0],
}

#: name -> (module body, None when the selection is exact for gradients, else a substring of
#: the reason the analysis gives)
CASES: Dict[str, Tuple[str, Optional[str]]] = {
    "overflow clamp of a local": (
        """
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = nn.Parameter(torch.full((4,), 1.5))

            def forward(self, x):
                h = x * self.scale
                if torch.isinf(h).any() or torch.isnan(h).any():
                    clamp_value = torch.finfo(h.dtype).max - 1000
                    h = torch.clamp(h, min=-clamp_value, max=clamp_value)
                return h * 2
        """,
        None,
    ),
    "relu, masked_fill, where, negation and constants": (
        """
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = nn.Parameter(torch.full((4,), 0.5))

            def forward(self, x):
                h = x * self.scale
                if h.sum() > 0:
                    y = torch.relu(h) - 1
                    z = -h * 0.5
                else:
                    y = h.masked_fill(h < 0, 0.0)
                    z = torch.where(h > 1, h, h + 1)
                return y + z
        """,
        None,
    ),
    "a reduction over a tuple of dims": (
        """
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = nn.Parameter(torch.full((4,), 2.0))

            def forward(self, x):
                h = (x * self.scale).view(2, 2)
                if h.mean() > 1:
                    y = h.sum(dim=(0, 1), keepdim=True) + h
                else:
                    y = h.mean((0,), keepdim=True) - h
                return y
        """,
        None,
    ),
    "returns of slices and reductions": (
        """
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = nn.Parameter(torch.full((4,), 2.0))

            def forward(self, x):
                h = (x * self.scale).unsqueeze(0)
                if h.mean() > 1:
                    return h[:, :2].sum(dim=-1) / 4
                return h[:, 2:].t().float().sum(dim=0) + 0.25
        """,
        None,
    ),
    "log on the path not taken": (
        """
        class Model(nn.Module):
            def forward(self, x):
                h = x * 1
                if (h > 0).all():
                    h = torch.log(h)
                return h + 1
        """,
        "torch.log(h)",
    ),
    "a setup read twice on the path not taken": (
        """
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = nn.Parameter(torch.full((4,), 1.5))

            def forward(self, x):
                h = x * self.scale
                if (h > 0).all():
                    d = h * 2
                    h = torch.log(d) + d
                return h + 1
        """,
        "torch.log(d)",
    ),
    "sqrt on the path not taken": (
        """
        class Model(nn.Module):
            def forward(self, x):
                h = x + 0
                if (h >= 0).all():
                    y = h.sqrt()
                else:
                    y = h
                return y
        """,
        "h.sqrt()",
    ),
    "division by a tensor": (
        """
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.d = nn.Parameter(torch.tensor([1.0, 0.0, 2.0, 4.0]))

            def forward(self, x):
                h = x * 1
                if (self.d != 0).all():
                    h = h / self.d
                return h
        """,
        "h / self.d",
    ),
    "product of tensors": (
        """
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = nn.Parameter(torch.full((4,), 3.0))

            def forward(self, x):
                h = x * 1
                if torch.isfinite(h).all():
                    h = h * self.w
                return h
        """,
        "h * self.w",
    ),
    "a parameter read on one path only": (
        """
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.bias = nn.Parameter(torch.full((4,), 0.25))

            def forward(self, x):
                h = x * 1
                if h.sum() > 0:
                    h = h + self.bias
                return h
        """,
        "only one path reads `self.bias`",
    ),
    "a parameter read only in a condition on one path": (
        """
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.gate = nn.Parameter(torch.full((4,), 0.5))

            def forward(self, x):
                a = x * 2
                if x.sum() > 0:
                    y = torch.where(self.gate > 0.4, a, a + 1)
                else:
                    y = a + self.gate
                return y
        """,
        "only one path reads `self.gate`",
    ),
    "a floor that the module holds": (
        """
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("floor", torch.tensor([0.5, 0.0, 0.0, 0.5]))

            def forward(self, x):
                h = x * 2
                if h.sum() > 0:
                    h = torch.maximum(h, self.floor)
                return h
        """,
        "keeps `self.floor`, a tensor the caller can hold",
    ),
    "a clamp that keeps the caller's tensor for backward": (
        """
        class Model(nn.Module):
            def forward(self, x):
                if torch.isinf(x).any():
                    y = x.clamp(-5.0, 5.0)
                else:
                    y = x - 1
                return y
        """,
        "keeps `x`, a tensor the caller can hold",
    ),
    "two results of one if, in each layer of a stack": (
        """
        class Layer(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)

            def forward(self, h):
                h = self.fc(h)
                if h.max() > 1.0:
                    g = h / h.max()
                    s = h.softmax(-1) * 2.0
                else:
                    g = h
                    s = h.sigmoid()
                return g + s


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                torch.manual_seed(0)
                self.layers = nn.ModuleList([Layer() for _ in range(2)])

            def forward(self, x):
                x = torch.stack([x, x.flip(0), x * 0.5])
                for layer in self.layers:
                    x = layer(x)
                return x
        """,
        "the backward of `h / h.max()`",
    ),
    "a product with a literal that overflows float32": (
        """
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = nn.Parameter(torch.ones(4))

            def forward(self, x):
                h = x * self.w
                if h.sum() > 0:
                    y = h + 1
                else:
                    y = h * 1e39
                return y
        """,
        "the backward of `h * 1e+39`",
    ),
}


def _source(body: str) -> str:
    return HEADER + dedent(body).lstrip()


def _selection(source: str) -> Selection:
    (finding,) = [f for f in analyze_source(source, "model.py") if f.code == "GM201"][:1]
    assert isinstance(finding.plan, Selection), finding.message
    return finding.plan


@pytest.mark.parametrize("name", CASES)
def test_the_analysis_proves_or_names_the_gradient_problem(name: str) -> None:
    body, problem = CASES[name]
    plans = [
        f.plan for f in analyze_source(_source(body), "model.py") if isinstance(f.plan, Selection)
    ]
    assert plans, "every case is fixed"
    reasons = [plan.training_problem for plan in plans]
    if problem is None:
        assert reasons == [None] * len(plans)
    else:
        assert any(reason and problem in reason for reason in reasons), reasons


def _fixed(source: str) -> Tuple[str, List[str]]:
    result = transform_module(FixAll(CodemodContext(filename="model.py")), source)
    assert isinstance(result, TransformSuccess), result
    return result.code, list(result.warning_messages)


def test_the_codemod_and_the_finding_say_what_stays_in_training() -> None:
    source = _source(CASES["log on the path not taken"][0])
    code, warnings = _fixed(source)
    assert KEPT in code and "_graphmend_where_grad" not in code
    (warning,) = warnings
    assert "GM201 fixed, but it keeps the branch while autograd records" in warning
    (finding,) = [f for f in analyze_source(source, "model.py") if f.code == "GM201"]
    assert "fix: graphmend.PredicateControlFlow (it keeps the branch while" in finding.message
    exact, none = _fixed(_source(CASES["overflow clamp of a local"][0]))
    assert "_graphmend_where_grad(" in exact and none == []


Outcome = Tuple[Any, Dict[str, Optional[Any]], bool]


def _run(model: Any, call: Callable[[Any], Any], values: List[float]) -> Outcome:
    """(output, gradients of the parameters and the input, whether the output requires grad)."""
    x = torch.tensor(values, requires_grad=True)
    for parameter in model.parameters():
        parameter.grad = None
    output = call(x)
    weights = torch.linspace(-1.0, 2.0, output.numel()).reshape(output.shape)
    if output.requires_grad:
        (output * weights).sum().backward()
    grads = {name: p.grad for name, p in model.named_parameters()}
    grads["input"] = x.grad
    return output.detach(), grads, output.requires_grad


def _same_outcome(expected: Outcome, actual: Outcome) -> bool:
    (want, want_grads, want_flag), (got, got_grads, got_flag) = expected, actual
    return (
        same(got, want)
        and got_flag == want_flag
        and want_grads.keys() == got_grads.keys()
        and all(
            (want_grads[k] is None) == (got_grads[k] is None)
            and (want_grads[k] is None or same(got_grads[k], want_grads[k]))
            for k in want_grads
        )
    )


def _modules(name: str, tmp_path: Path) -> Tuple[ModuleType, ModuleType, str]:
    source = _source(CASES[name][0])
    code, _ = _fixed(source)
    return load(source, tmp_path / "original"), load(code, tmp_path / "fixed"), code


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_gradients_are_the_originals_eager_and_compiled(
    name: str, backend: str, tmp_path: Path
) -> None:
    original, fixed, code = _modules(name, tmp_path)
    exact = CASES[name][1] is None
    assert ("_graphmend_where_grad(" in code) == exact
    assert (KEPT in code) != exact
    before, after = original.Model(), fixed.Model()
    after.load_state_dict(before.state_dict())
    torch._dynamo.reset()
    compiled_after = torch.compile(after, backend=backend)
    for values in INPUTS.values():
        expected = _run(before, before, values)
        assert _same_outcome(expected, _run(after, after, values)), values
        assert _same_outcome(expected, _run(after, compiled_after, values)), values
    x = torch.tensor(INPUTS["mixed"], requires_grad=True)
    report = probe(after, x)
    if exact:  # one graph while autograd records
        assert (report.graphs, report.breaks) == (1, 0), [str(s) for s in report.break_sites]
    else:  # the branch as written while autograd records: its break, the original's gradients
        assert report.graphs > 1 or report.breaks > 0
        kept = probe(before, x)  # one branch for each `if`, as the original: no more graphs
        assert (report.graphs, report.breaks) <= (kept.graphs, kept.breaks)
    with torch.no_grad():
        report = probe(after, x)
    assert (report.graphs, report.breaks) == (1, 0), "inference is one graph either way"


@pytest.mark.parametrize("name", [n for n, (_, problem) in CASES.items() if problem])
def test_a_frozen_model_is_selected_with_grad_mode_on(name: str, tmp_path: Path) -> None:
    """Where nothing the sides compute with requires grad (frozen weights, inputs without
    grad), the kept `if` selects compiled even with grad mode on: one graph, the original's
    values."""
    original, fixed, code = _modules(name, tmp_path)
    assert f"if {KEEPS_BRANCH}(" in code and f"if {KEEPS_BRANCH}():" not in code
    before, after = original.Model(), fixed.Model()
    after.load_state_dict(before.state_dict())
    for model in (before, after):
        model.requires_grad_(False)
    x = torch.tensor(INPUTS["mixed"])
    report = probe(after, x)
    assert (report.graphs, report.breaks) == (1, 0), [str(s) for s in report.break_sites]
    torch._dynamo.reset()
    compiled = torch.compile(after, backend="eager")
    for values in INPUTS.values():
        assert same(compiled(torch.tensor(values)), before(torch.tensor(values))), values


def _forced(source: str, tmp_path: Path) -> ModuleType:
    """The fix of ``source`` made as if the analysis found no gradient problem."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(where_planning, "gradient_problem", lambda *args, **kwargs: None)
        code, _ = _fixed(source)
    assert "_graphmend_where_grad(" in code
    return load(code, tmp_path / "forced")


@pytest.mark.parametrize(
    "name",
    [
        "log on the path not taken",
        "sqrt on the path not taken",
        "division by a tensor",
        "product of tensors",
        "a parameter read on one path only",
        "a parameter read only in a condition on one path",
    ],
)
def test_forcing_the_selection_under_autograd_changes_gradients(
    name: str, tmp_path: Path
) -> None:
    """What the analysis avoids: the same fix with the training helper differs from the original
    under torch.compile, where it selects (NaN for a zero times inf, a zero `.grad` where the
    original left None); eager, the helper branches as the original did."""
    source = _source(CASES[name][0])
    original = load(source, tmp_path / "original")
    before, after = original.Model(), _forced(source, tmp_path).Model()
    after.load_state_dict(before.state_dict())
    compiled_after = torch.compile(after, backend="eager")
    outcomes = [(_run(before, before, values), values) for values in INPUTS.values()]
    assert all(_same_outcome(want, _run(after, after, values)) for want, values in outcomes)
    assert any(
        not _same_outcome(want, _run(after, compiled_after, values)) for want, values in outcomes
    )


def test_forcing_a_clamp_of_the_callers_tensor_breaks_its_backward(tmp_path: Path) -> None:
    source = _source(CASES["a clamp that keeps the caller's tensor for backward"][0])
    original = load(source, tmp_path / "original")

    def backward_after_update(model: Any) -> Optional[str]:
        leaf = torch.tensor(INPUTS["positive"], requires_grad=True)
        x = leaf * 1  # the caller's tensor, updated in place after the call
        output = model(x)
        with torch.no_grad():
            x.add_(1)
        try:
            output.sum().backward()
        except RuntimeError as error:
            return type(error).__name__
        return None

    assert backward_after_update(original.Model()) is None
    forced = _forced(source, tmp_path).Model()
    assert backward_after_update(forced) is None  # eager, the helper branches
    assert backward_after_update(torch.compile(forced, backend="eager")) == "RuntimeError"


# ---------------------------------------------------------------------------- [Trap], [Defer]
TRAP_AND_DEFER = """
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.full((4,), 1.5))

    def forward(self, x):
        h = x * self.w
        if torch.isnan(h).any():
            # computed by the check when it fails, from `h` and `x`, read for their sizes only
            raise ValueError(f"NaN in the activations ({h.shape[-1] // x.shape[0]} a row)")
        logger.warning("shape %s", "checked")
        print("scaled", h.shape)
        # a number or metadata of `h` (which requires grad) has no grad_fn to show
        print("norm", h.norm().item())
        logger.warning("dtype %s", h.dtype)
        return h.tanh()


class Shows(nn.Module):
    def forward(self, x):
        h = x * 2
        print("h is", h)
        return h + 1
"""


def _with_stdout(call: Callable[[], Outcome]) -> Tuple[Any, str]:
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        try:
            result: Any = call()
        except ValueError as error:
            result = (type(error), str(error))
    return result, stdout.getvalue()


def test_guards_and_deferred_calls_under_autograd(tmp_path: Path) -> None:
    source = HEADER + TRAP_AND_DEFER
    code, warnings = _fixed(source)
    assert all("its helper takes the number" in warning for warning in warnings)
    assert "_graphmend_check_valueerror(" in code and "_graphmend_deferred" in code
    assert "def _graphmend_check_valueerror(failed, meta1, meta2):" in code
    original, fixed = load(source, tmp_path / "original"), load(code, tmp_path / "fixed")
    before, after = original.Model(), fixed.Model()
    torch._dynamo.reset()
    compiled_after = torch.compile(after, backend="eager")
    for values in (INPUTS["positive"], INPUTS["nan"], INPUTS["inf"]):
        expected = _with_stdout(lambda: _run(before, before, values))
        for call in (after, compiled_after):
            result, stdout = _with_stdout(lambda: _run(after, call, values))
            assert stdout == expected[1]
            if isinstance(expected[0], tuple) and expected[0][0] is ValueError:
                assert result == expected[0]
            else:
                assert _same_outcome(expected[0], result)
    report = probe(after, torch.tensor(INPUTS["positive"], requires_grad=True))
    assert (report.graphs, report.breaks) == (1, 0), [str(s) for s in report.break_sites]


def test_a_printed_tensor_that_requires_grad_is_printed_as_written(tmp_path: Path) -> None:
    """Its text holds ``grad_fn``, which no graph can carry: the helper makes the call as
    written under compile (the break stays) and prints the same line."""
    source = HEADER + TRAP_AND_DEFER
    code, _ = _fixed(source)
    original, fixed = load(source, tmp_path / "original"), load(code, tmp_path / "fixed")
    x = torch.tensor(INPUTS["positive"], requires_grad=True)
    expected = _with_stdout(lambda: original.Shows()(x))[1]
    assert "grad_fn=<MulBackward0>" in expected
    torch._dynamo.reset()
    assert _with_stdout(lambda: torch.compile(fixed.Shows(), backend="eager")(x))[1] == expected
    with torch.no_grad():
        report = probe(fixed.Shows(), x)
    assert (report.graphs, report.breaks) == (1, 0)
    # the break stays, once: the helper's frames, which Dynamo inlines, are not compiled
    # apart (`_graphmend_inline_only`), so no frame of theirs adds a break event
    report, expected = probe(fixed.Shows(), x), probe(original.Shows(), x)
    assert (report.graphs, report.breaks) == (expected.graphs, expected.breaks) != (1, 0)


# ---------------------------------------------------------------------------- LayerDrop
LAYERDROP = Path(__file__).parent / "fixtures" / "fix" / "PredicateControlFlow"


def _layerdrop_outcomes(model: Any, call: Callable[[Any], Any]) -> List[Any]:
    torch.manual_seed(3)
    runs = [_run(model, call, INPUTS[key]) for key in ("positive", "mixed", "negative")]
    return runs + [torch.random.get_rng_state()]


def _same_layerdrop(before: Any, after: Any, backend: str) -> None:
    """``after`` (eager, then compiled) gives ``before``'s compiled outcomes and random stream."""
    torch._dynamo.reset()
    expected = _layerdrop_outcomes(before, torch.compile(before, backend=backend))
    torch._dynamo.reset()
    for call in (after, torch.compile(after, backend=backend)):
        got = _layerdrop_outcomes(after, call)
        assert all(_same_outcome(e, g) for e, g in zip(expected[:-1], got[:-1]))
        assert torch.equal(expected[-1], got[-1]), "the same numbers are drawn"


LAYERDROP_READ_AGAIN = """
class Encoder(nn.Module):
    def __init__(self, layerdrop=0.0):
        super().__init__()
        self.layerdrop = layerdrop
        self.layers = nn.ModuleList([nn.Linear(4, 4), nn.Linear(4, 4)])

    def forward(self, hidden_states):
        for layer in self.layers:
            dropout_probability = torch.rand([])
            if dropout_probability < self.layerdrop:
                continue
            hidden_states = layer(hidden_states) + 0.0 * dropout_probability
        return hidden_states
"""


@pytest.mark.parametrize("layerdrop", [0.0, 0.5])
@pytest.mark.parametrize("source, name", [
    ("static_guard", "Encoder"), ("static_guard", "Decoder"), ("read_again", "Encoder"),
])
def test_layerdrop_guard_keeps_the_draws_and_the_skips(
    source: str, name: str, layerdrop: float, tmp_path: Path
) -> None:
    """``_graphmend_draw_below(draw, p)`` draws the same numbers and skips the same layers, with
    the same gradients, eager and compiled (the ``eager`` backend and ``aot_eager``), whether
    the function reads the draw again or only in the test; one graph in training when
    ``layerdrop`` is 0, the break kept otherwise."""
    text = (
        (LAYERDROP / "layerdrop_static_guard.py").read_text()
        if source == "static_guard"
        else HEADER + LAYERDROP_READ_AGAIN
    )
    code, _ = _fixed(text)
    assert code.count("_graphmend_draw_below(dropout_probability, self.layerdrop)") == (
        2 if source == "static_guard" else 1
    )
    original, fixed = load(text, tmp_path / "original"), load(code, tmp_path / "fixed")
    before = getattr(original, name)(layerdrop).train()
    after = getattr(fixed, name)(layerdrop).train()
    after.load_state_dict(before.state_dict())
    for backend in ("eager", "aot_eager"):
        _same_layerdrop(before, after, backend)
    report = probe(after, torch.tensor(INPUTS["mixed"], requires_grad=True))
    if layerdrop == 0.0:
        assert (report.graphs, report.breaks) == (1, 0), [str(s) for s in report.break_sites]
    else:
        assert report.breaks > 0
    assert probe(before, torch.tensor(INPUTS["mixed"])).breaks > 0


@pytest.mark.parametrize("name", ["Encoder", "Decoder"])
def test_layerdrop_guard_without_the_kept_draw_changes_the_random_stream(
    name: str, tmp_path: Path
) -> None:
    """Why the helper hands the draw to ``_graphmend_keep``: ``p > 0 and draw < p`` skips the
    comparison with ``p`` at 0, the draw is then used nowhere in the graph, AOTAutograd drops
    it, and the numbers drawn after it change (the original's comparison, a graph output at its
    break, keeps it). The twenty-first sweep found that in an earlier form of the fix."""
    source = (LAYERDROP / "layerdrop_static_guard.py").read_text()
    guarded = source.replace(
        "if dropout_probability < self.layerdrop:",
        "if self.layerdrop > 0 and dropout_probability < self.layerdrop:",
    ).replace(
        "if self.training and (dropout_probability < self.layerdrop):",
        "if self.training and self.layerdrop > 0 and (dropout_probability < self.layerdrop):",
    )
    original, forced = load(source, tmp_path / "original"), load(guarded, tmp_path / "forced")
    before, after = getattr(original, name)(0.0).train(), getattr(forced, name)(0.0).train()
    after.load_state_dict(before.state_dict())
    with pytest.raises(AssertionError, match="the same numbers are drawn"):
        _same_layerdrop(before, after, "aot_eager")


IN_PLACE_AFTER = """
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(4))
        self.act = nn.ReLU(inplace=True)

    def forward(self, x):
        h = x * self.w
        if h.sum() < 100:
            y = h + 1
        else:
            y = h.clamp(min=-1.0)
        out = self.act(h)
        return y * 2 + out
"""


def test_a_tensor_updated_in_place_later_is_not_saved_by_the_path_not_taken(
    tmp_path: Path,
) -> None:
    """`h.clamp(...)` keeps `h` for backward; an in-place ReLU of `h` after the `if` makes that
    backward fail. The original runs the clamp only when it takes that path; the selection
    would run it always, so the fix keeps the branch as written under autograd."""
    source = HEADER + IN_PLACE_AFTER
    (problem,) = [
        f.plan.training_problem
        for f in analyze_source(source, "model.py")
        if isinstance(f.plan, Selection)
    ]
    assert problem and "keeps `h` for backward" in problem and "updates it in place" in problem
    code, _ = _fixed(source)
    original, fixed = load(source, tmp_path / "original"), load(code, tmp_path / "fixed")
    before, after = original.Model(), fixed.Model()
    after.load_state_dict(before.state_dict())
    values = INPUTS["mixed"]  # the `h + 1` path: the original's backward runs
    expected = _run(before, before, values)
    for backend in ("eager", "aot_eager"):
        torch._dynamo.reset()
        compiled = torch.compile(after, backend=backend)
        assert _same_outcome(expected, _run(after, after, values))
        assert _same_outcome(expected, _run(after, compiled, values))


@pytest.mark.parametrize("probability", [None, "0.1", [0.0]])
def test_layerdrop_helper_compares_what_is_not_a_number_as_written(probability: Any) -> None:
    """A probability that is not a Python number (None, a string, a list; a numpy array, a
    tensor) is compared with the draw as the original did: the same result or the same
    error (the twenty-third sweep found `p > 0` failing first with another message)."""
    namespace: Dict[str, Any] = {"torch": torch}
    for name in (INLINE_ONLY, DEFERRED, KEEP, DRAW_BELOW):
        exec(FIXED_HELPERS[name], namespace)
    draw = torch.rand([])
    with pytest.raises(TypeError) as expected:
        draw < probability
    with pytest.raises(TypeError) as got:
        namespace[DRAW_BELOW](draw, probability)
    assert str(got.value) == str(expected.value)


LAYER_WEIGHT_READ = """
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        h = x * 2.0
        if h.mean() > 0:
            h = h + self.lin.weight.sum()
        else:
            h = h - 1
        return h
"""


@pytest.mark.parametrize("compiled", [False, True])
def test_a_layer_parametrized_elsewhere_is_read_as_often_as_written(
    compiled: bool, tmp_path: Path
) -> None:
    """A training script may give a layer a parametrization (``spectral_norm``), which runs a
    power iteration, updating the layer's ``_u`` and ``_v``, on every read of its weight. The
    kept ``if`` took ``self.lin.weight`` itself, so the fixed code read it once more on every
    call, eager too (the forty-fifth sweep's): it takes the layer, and looks at its
    parameters."""
    source = dedent(LAYER_WEIGHT_READ).lstrip()
    result = transform_module(FixAll(CodemodContext(filename="model.py")), source)
    assert isinstance(result, TransformSuccess) and "_graphmend_keeps_branch(h, self.lin)" in (
        result.code
    )
    outcomes = []
    for name, code in {"original": source, "fixed": result.code}.items():
        torch.manual_seed(0)
        model = load(code, tmp_path / name).Model()
        torch.nn.utils.parametrizations.spectral_norm(model.lin)
        torch._dynamo.reset()
        run = torch.compile(model, backend="eager") if compiled else model
        values = [run(torch.full((2, 4), sign)) for sign in (1.0, -1.0)]
        sum(v.sum() for v in values).backward()
        state = dict(model.lin.parametrizations.weight[0].named_buffers())
        gradient = model.lin.parametrizations.weight.original.grad
        outcomes.append((values, state, gradient))
    (expected, state, gradient), (got, fixed_state, fixed_gradient) = outcomes
    assert all(same(a, b) for a, b in zip(got, expected))
    assert all(torch.equal(state[k], fixed_state[k]) for k in state)
    assert torch.equal(gradient, fixed_gradient)
