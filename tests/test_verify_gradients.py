"""`graphmend verify --grad`: backward passes after each call, gradients recorded and compared
(None is not zeros, a difference in the sign of zero is documented), the report, and (slow) the
runner on small models whose fixed copies keep or change the gradients."""

import dataclasses
import json
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")

from flake8_graphmend.verify import gradients  # noqa: E402
from flake8_graphmend.verify.behaviour import (  # noqa: E402
    compare_behaviour,
    compare_gradients,
    record_calls,
)
from flake8_graphmend.verify.dynamo import count_backward_graphs  # noqa: E402
from flake8_graphmend.verify.report import problems, render_table, to_json  # noqa: E402
from flake8_graphmend.verify.results import ArmResult  # noqa: E402
from test_verify_units import LABELS, _record, _verification  # noqa: E402

ZERO_SIGNS = "gradients differ only in the sign of zero (-0.0 vs 0.0)"


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.used = torch.nn.Linear(3, 2)
        self.unused = torch.nn.Linear(3, 2)

    def forward(self, x, scale=1.0):
        return {"y": self.used(x) * scale, "n": 1}


def _recorded(call, model, *args, **kwargs):
    targets = gradients.gradient_targets(model, args, kwargs)
    with torch.enable_grad():
        return record_calls([call], targets)[0]


# --- recording ------------------------------------------------------------------------------


def test_targets_are_the_parameters_and_the_inputs_that_require_grad():
    net, x = Net(), torch.ones(1, 3, requires_grad=True)
    targets = gradients.gradient_targets(net, (x, torch.ones(1)), {"mask": x})
    assert list(targets) == [
        "param:used.weight",
        "param:used.bias",
        "param:unused.weight",
        "param:unused.bias",
        "input:args[0]",
        "input:kwargs['mask']",
    ]
    assert gradients.gradient_targets(lambda x: x, (torch.ones(1),), {}) == {}


def test_a_call_records_its_own_gradients_with_none_where_there_is_none():
    torch.manual_seed(0)
    net, x = Net(), torch.ones(1, 3, requires_grad=True)
    net.used.weight.grad = torch.full((2, 3), 7.0)  # left by an earlier step: cleared first
    record = _recorded(lambda: net(x), net, x)
    assert record.exception is None and record.backward == gradients.DONE
    grads = record.gradients
    assert grads["param:unused.weight"] is None and grads["param:unused.bias"] is None
    weight = torch.randn((1, 2), generator=torch.Generator().manual_seed(gradients.WEIGHT_SEED))
    assert torch.equal(grads["param:used.bias"], weight[0])
    assert torch.equal(grads["param:used.weight"], weight[0][:, None] * torch.ones(2, 3))
    assert torch.equal(grads["input:args[0]"], weight @ net.used.weight.detach())


def test_the_scalar_leaves_the_global_rng_alone_and_weighs_alike_every_time():
    output = {"a": torch.ones(2, requires_grad=True), "b": torch.ones(2), "c": 2}
    state = torch.get_rng_state()
    first, second = gradients.training_scalar(output), gradients.training_scalar(output)
    assert torch.equal(torch.get_rng_state(), state)
    assert torch.equal(first, second) and first.requires_grad
    assert gradients.training_scalar({"b": torch.ones(2)}) is None


def test_no_output_that_requires_grad_is_recorded_not_a_failure():
    net = Net()
    record = _recorded(lambda: net(torch.ones(1, 3)).get("n"), net)
    assert record.exception is None
    assert (record.backward, record.gradients) == (gradients.NO_OUTPUT, None)


def test_an_exception_in_backward_is_the_call_s_behaviour():
    class Fails(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            raise ValueError("no gradient for you")

    net = Net()
    record = _recorded(lambda: Fails.apply(net(torch.ones(1, 3))["y"]), net)
    assert record.output is not None and record.backward == gradients.RAISED
    assert record.exception == ("ValueError", "no gradient for you")
    assert record.failure.startswith("in backward: ValueError: no gradient for you (at ")
    returned = dataclasses.replace(
        record, exception=None, failure=None, backward=gradients.DONE, gradients={}
    )
    comparison = compare_behaviour([returned], [record], LABELS, gradients=True)
    assert comparison.parts["exceptions"].difference == (
        "exceptions: call 1: eager original returned, "
        "compiled fixed raised ValueError in backward: 'no gradient for you'"
    )
    assert comparison.failing() == ["exceptions"]


def test_backward_graphs_are_counted_in_a_compile_of_their_own():
    def broken(x):
        y = x * 2
        torch._dynamo.graph_break()
        return y.sin()

    x = torch.ones(3, requires_grad=True)
    assert count_backward_graphs(broken, lambda out: out.sum().backward(), x) == 2


# --- comparing ------------------------------------------------------------------------------


def _grads(**targets):
    return _record(backward=gradients.DONE, gradients={f"param:{k}": v for k, v in targets.items()})


def _gradients_part(expected, actual):
    return compare_behaviour([expected], [actual], LABELS, gradients=True).parts["gradients"]


def test_equal_gradients_and_none_on_both_sides_are_equal():
    part = _gradients_part(_grads(w=torch.ones(2), b=None), _grads(w=torch.ones(2), b=None))
    assert part.equal and part.difference is None


def test_none_is_not_zeros():
    part = _gradients_part(_grads(w=None), _grads(w=torch.zeros(2)))
    assert not part.ok
    assert part.difference == (
        "gradients: call 1: param:w: no gradient in the eager original, "
        "a gradient in the compiled fixed"
    )


def test_a_difference_only_in_the_sign_of_zero_is_documented():
    part = _gradients_part(
        _grads(w=torch.tensor([0.0, 1.0, float("nan")])),
        _grads(w=torch.tensor([-0.0, 1.0, float("nan")])),
    )
    assert part.ok and not part.equal and part.documented == ZERO_SIGNS
    assert part.difference == "gradients: call 1: param:w: only the sign of zero differs"


def test_any_other_difference_fails_even_beside_a_sign_of_zero():
    part = _gradients_part(
        _grads(a=torch.tensor([0.0]), w=torch.tensor([1.0, 2.0])),
        _grads(a=torch.tensor([-0.0]), w=torch.tensor([1.0, 2.5])),
    )
    assert not part.ok and part.documented is None
    assert part.difference == (
        "gradients: call 1: param:a: only the sign of zero differs (and 1 more)"
    )
    nan = _gradients_part(_grads(w=torch.tensor([float("nan")])), _grads(w=torch.tensor([0.0])))
    assert not nan.ok


def test_a_backward_pass_on_one_side_only_differs():
    none = _record(backward=gradients.NO_OUTPUT)
    part = _gradients_part(_grads(w=torch.ones(1)), none)
    assert part.difference == (
        "gradients: call 1: eager original ran backward, "
        "compiled fixed ran none (no output tensor requires grad)"
    )


def test_calls_that_raised_are_left_to_the_exceptions_part():
    raised = _record(output=None, exception=("ValueError", "x"))
    assert compare_gradients([raised], [_grads(w=torch.ones(1))], LABELS).equal


# --- report ---------------------------------------------------------------------------------


def test_without_grad_the_report_is_as_before(tmp_path):
    verification = _verification(tmp_path)
    document = to_json(verification)
    assert document["gradients_equal"] is None and document["compiled_gradients"] is None
    assert document["original"]["backward_graphs"] is None
    assert all("gradients_equal" not in b for b in document["behaviour"].values())
    table = render_table(verification)
    assert "gradients" not in table and "backward" not in table


def _trained(tmp_path, compiled_fixed=None, first_calls=None):
    """A --grad verification: 4 forward and 3 backward graphs fixed to 1 and 1."""
    grads = [_grads(w=torch.ones(2), b=None)] * 2
    verification = _verification(tmp_path, eager_original=grads, compiled_fixed=compiled_fixed,
                                 grad=True)
    verification.original.backward_graphs, verification.fixed.backward_graphs = 3, 1
    verification.fixed.gradient_comparison = compare_gradients(
        grads[:1], (first_calls or grads)[:1], ("compiled original", "compiled fixed")
    )
    return verification


def test_equal_gradients_are_reported(tmp_path):
    verification = _trained(tmp_path)
    assert problems(verification) == []
    document = to_json(verification)
    assert document["gradients_equal"] is True and document["ok"] is True
    assert document["compiled_gradients"] == {"equal": True, "difference": None,
                                              "documented": None}
    assert (document["original"]["backward_graphs"], document["fixed"]["backward_graphs"]) == (3, 1)
    assert document["behaviour"]["eager_original_vs_compiled_fixed"]["gradients_equal"] is True
    table = render_table(verification)
    assert "\nbackward graphs              3           1\n" in table
    assert "\ngradients         yes\n" in table
    assert "\n  compiled original vs compiled fixed (first calls): yes\n" in table


def test_different_gradients_fail_verification(tmp_path):
    changed = [_grads(w=torch.full((2,), 2.0), b=None)] * 2
    verification = _trained(tmp_path, compiled_fixed=changed, first_calls=changed)
    assert problems(verification) == [
        "the gradients of the two arms' first compiled calls differ",
        "the behaviour differs, eager original vs compiled fixed: gradients",
    ]
    document = to_json(verification)
    assert document["gradients_equal"] is False and document["behaviour_equal"] is False
    assert document["compiled_gradients"]["difference"] == (
        "gradients: call 1: param:w: max |difference| 1"
    )
    table = render_table(verification)
    assert (
        "\ngradients         no: eager original vs compiled fixed, "
        "compiled original vs compiled fixed (first calls)\n" in table
    )
    assert "      gradients: call 1: param:w: max |difference| 1 (and 1 more)\n" in table


def test_a_sign_of_zero_passes_with_the_difference_documented(tmp_path):
    signed = [_grads(w=torch.tensor([1.0, -0.0]), b=None)] * 2
    grads = [_grads(w=torch.tensor([1.0, 0.0]), b=None)] * 2
    verification = _verification(tmp_path, eager_original=grads, compiled_fixed=signed, grad=True)
    verification.fixed.gradient_comparison = compare_gradients(grads[:1], signed[:1], LABELS)
    assert problems(verification) == []
    assert to_json(verification)["gradients_equal"] is True
    assert f"\ngradients         yes; documented difference ({ZERO_SIGNS})\n" in render_table(
        verification
    )


def test_gradients_are_not_judged_when_a_first_compiled_call_raised(tmp_path):
    verification = _trained(tmp_path)
    verification.fixed.gradient_comparison = None  # as the arm leaves it then
    document = to_json(verification)
    assert document["gradients_equal"] is None and document["compiled_gradients"] is None
    table = render_table(verification)
    assert "\ngradients         - (a first compiled call raised; see behaviour)\n" in table


def test_a_backward_count_that_failed_says_why(tmp_path):
    verification = _trained(tmp_path)
    verification.fixed.backward_graphs_error = "RuntimeError: cannot trace (at m.py:3)"
    verification.fixed.backward_graphs = None
    table = render_table(verification)
    assert "\nbackward graphs              3           -\n" in table
    assert (
        "\n  backward graphs not counted, fixed: RuntimeError: cannot trace (at m.py:3)\n" in table
    )
    again = ArmResult.from_json(json.loads(json.dumps(verification.fixed.to_json())))
    assert again == verification.fixed


# --- the runner (slow: both arms of two verifications) ----------------------------------------

MODEL = """
    import logging

    import torch

    ORIGINAL_FILE = {original!r}
    logger = logging.getLogger("graphmend.test.grad")


    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(4, 4)
            self.detached = torch.nn.Linear(4, 4)

        def forward(self, x):
            logger.warning("forward")
            h = self.linear(x)
            if h.sum() > 0:
                h = h * 2
            else:
                h = h - 1
            # the same values in both copies; the gradient through h doubles in the fixed copy
            {change}
            return h, self.detached.weight.sum().detach()


    def build():
        torch.manual_seed(0)
        return Net(), (torch.randn(2, 4, requires_grad=True),)
"""
SAME = "h = h"
SCALED = "h = h + (h - h.detach()) * (0.0 if __file__ == ORIGINAL_FILE else 1.0)"


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """``--grad`` runs of a model whose fixed copy keeps (``same``) or doubles its gradients."""
    folder = tmp_path_factory.mktemp("grad")
    runs = {}
    for name, change in (("same", SAME), ("scaled", SCALED)):
        path = folder / f"{name}.py"
        path.write_text(textwrap.dedent(MODEL).format(original=str(path), change=change))
        out = folder / f"{name}.json"
        process = subprocess.run(
            [sys.executable, "-m", "flake8_graphmend.verify", str(path), "--grad", "--repeat",
             "2", "--json", str(out)],
            capture_output=True, text=True,
        )
        runs[name] = (process, json.loads(out.read_text()) if out.is_file() else None)
    return runs


@pytest.mark.slow
def test_a_fixed_model_trains_as_the_original(trained):
    process, report = trained["same"]
    assert process.returncode == 0, process.stdout + process.stderr
    assert report["gradients_equal"] is True and report["behaviour_equal"] is True
    assert (report["original"]["graphs"], report["fixed"]["graphs"]) == (2, 1)
    assert (report["original"]["backward_graphs"], report["fixed"]["backward_graphs"]) == (2, 1)
    assert report["compiled_gradients"]["equal"] is True
    assert "\ngradients         yes\n" in process.stdout


@pytest.mark.slow
def test_a_fixed_model_with_other_gradients_fails(trained):
    process, report = trained["scaled"]
    assert process.returncode == 1
    assert report["outputs_equal"] is True  # the outputs alone would pass
    assert report["gradients_equal"] is False and report["ok"] is False
    compiled = report["behaviour"]["eager_original_vs_compiled_fixed"]
    assert compiled["values_equal"] is True and compiled["gradients_equal"] is False
    assert compiled["differences"]["gradients"].startswith(
        "gradients: call 1: param:linear.weight: max |difference| "
    )
    assert "the gradients of the two arms' first compiled calls differ" in report["problems"]
