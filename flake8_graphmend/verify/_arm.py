"""One arm of `graphmend verify`, run as ``python -m flake8_graphmend.verify._arm SPEC.json``.

The runner starts each arm in a fresh process with private Inductor and Triton cache folders.
An arm:

1. (fixed arm) installs the overlay finder, so imports load the rewritten copies;
2. seeds torch and calls the entry's factory;
3. hands weights and inputs over: the original arm saves the model's ``state_dict`` and the
   inputs, the fixed arm loads that ``state_dict`` with ``strict=True`` and uses those inputs
   unless its own factory built the same (``_same_inputs``: then its own, which keep a tensor
   that autograd computed a non-leaf); a model that is not an ``nn.Module`` has no weights to
   hand over;
4. moves model and inputs to the device and, under ``torch.no_grad()`` unless ``grad`` is set,
   records ``CALLS`` eager calls (``behaviour``): that records the eager behaviour, and it fills
   lazily built module caches before anything is captured (CUDA graphs must not capture them).
   With ``grad``, each call is followed by a backward pass and its gradients are recorded
   (``gradients``);
5. writes back the state the factory built (``state.Snapshot``: buffers, parameters, plain
   attributes and globals, inputs; the eager calls may have updated them), reseeds and
   records ``CALLS`` compiled calls from a fresh "once" state: the first is the probe with
   the counting backend (graphs, break sites up to an exception, if any), the others call
   the probe's compiled model again (its graphs run eagerly); with ``grad``, backward passes
   too. When a compiled call raised, the state is written back again
   and ``CALLS`` calls are recorded with ``aot_eager`` (``FUNCTIONAL_BACKEND``), which writes
   updates of buffers and inputs back after the graph: an update that a check failing inside
   the graph loses shows in the recorded state;
6. unless a compiled call raised, times the calls (the forward calls only): with the ``eager``
   backend, the probe's call is the cold call and the probe's compiled model is called again;
   with another backend, Dynamo is reset and the model compiled afresh with it and the mode;
   then checks ``fullgraph=True`` with the eager backend and, with ``grad``, counts the backward
   graphs in a compile of their own (``dynamo.count_backward_graphs``);
7. compares: the original arm saves its recordings and compares its compiled calls with its
   eager ones (for reference: what torch alone changes); the fixed arm compares its compiled
   (and ``aot_eager``) and its eager calls with the original's eager ones, and its first
   compiled output (and, with
   ``grad``, gradients) bit for bit with the original's (both computed by captured graphs run
   eagerly, whatever ``--backend`` is timed).

An exception that the workload raises is recorded as its behaviour. The arm writes an
``ArmResult`` as JSON, or ``{"error": "one line"}`` when a step fails.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from .behaviour import CallRecord, compare_behaviour, compare_gradients, record_calls
from .compare import compare_outputs, leaves, tensor_difference
from .dynamo import (
    CompileReport,
    count_backward_graphs,
    fullgraph_error,
    probe_into,
    summarize_exception,
)
from .entry import Workload, describe_failure, load_workload
from .errors import VerifyError
from .gradients import backward, gradient_targets
from .overlay import OverlayFinder
from .results import ArmResult, SiteResult
from .state import Snapshot, state_of
from .timing import Timings, move_to, resolve_device, time_after_first_call, time_calls, timed

ORIGINAL, FIXED = "original", "fixed"
EAGER, COMPILED, FUNCTIONAL = "eager", "compiled", "functional"
FUNCTIONAL_BACKEND = "aot_eager"
"""The backend of the third recording, made when a compiled call raised: AOTAutograd writes
updates of buffers and inputs back after the graph, which an exception inside it skips."""
CALLS = 2
"""Calls per recording: two show what is written once only (``warning_once``, warnings)."""
_WEIGHTS, _INPUTS, _RECORDINGS = "weights.pt", "inputs.pt", "recordings.pt"


@dataclass
class ArmSpec:
    """What the runner asks of an arm (written to JSON by the runner)."""

    role: str
    entry_source: str
    entry_shown: str
    factory: str
    handover_dir: str
    result_path: str
    device: str = "auto"
    backend: str = "eager"
    mode: Optional[str] = None
    grad: bool = False
    seed: int = 0
    repeat: int = 20
    copies: Dict[str, str] = field(default_factory=dict)


def prepare(spec: ArmSpec) -> Tuple[Workload, str]:
    """Steps 1 to 3 of the module docstring; the workload moved to its device, and the device."""
    import torch

    if spec.role == FIXED:
        OverlayFinder(spec.copies).install()
    sys.path.insert(0, str(Path(spec.entry_shown).resolve().parent))
    device = resolve_device(spec.device)
    torch.manual_seed(spec.seed)
    workload = load_workload(Path(spec.entry_source), spec.factory, spec.entry_shown)
    _hand_over(workload, spec.role, Path(spec.handover_dir))
    return _on_device(workload, device), device


def run_arm(spec: ArmSpec) -> ArmResult:
    """Steps 1 to 7 of the module docstring."""
    import torch

    workload, device = prepare(spec)
    handover = Path(spec.handover_dir)

    report = CompileReport(graphs=0)
    probe_s: List[float] = []  # the wall time of the probe's call, once it has returned

    def probe_call() -> Any:
        output, seconds = timed(
            lambda: probe_into(report, workload.model, *workload.args, **workload.kwargs), device
        )
        probe_s.append(seconds)
        return output

    def compiled_call() -> Any:
        assert report.compiled is not None, "probe_call compiles"
        return report.compiled(*workload.args, **workload.kwargs)

    targets = None
    if spec.grad:
        targets = gradient_targets(workload.model, workload.args, workload.kwargs)
    state = state_of(workload)
    initial = Snapshot(workload)
    with torch.set_grad_enabled(spec.grad):
        torch.manual_seed(spec.seed)
        recordings = {EAGER: record_calls([workload] * CALLS, targets, state)}
        initial.restore()
        torch.manual_seed(spec.seed)
        recordings[COMPILED] = record_calls(
            [probe_call] + [compiled_call] * (CALLS - 1), targets, state
        )
        raised = any(record.exception for record in recordings[COMPILED])
        if raised:
            initial.restore()
            torch.manual_seed(spec.seed)
            functional = torch.compile(workload.model, backend=FUNCTIONAL_BACKEND)
            recordings[FUNCTIONAL] = record_calls(
                [lambda: functional(*workload.args, **workload.kwargs)] * CALLS, targets, state
            )
        timings = None if raised else _time(workload, report, probe_s[0], spec, device)
        fullgraph = fullgraph_error(workload.model, *workload.args, **workload.kwargs)
        backward_graphs = _backward_graphs(workload, spec.grad and not raised)

    sites = [
        SiteResult(site.filename, site.lineno, site.gb_id, site.gb_type, site.reason, events)
        for site, events in report.site_counts().items()
    ]
    result = ArmResult(
        device=device,
        torch_version=torch.__version__,
        graphs=report.graphs,
        compiled_calls=report.compiled_calls,
        breaks=report.breaks,
        break_sites=sites,
        fullgraph_error=fullgraph,
        timings=timings,
        exceptions={
            mode: [record.failure for record in records] for mode, records in recordings.items()
        },
        backward_graphs=backward_graphs[0],
        backward_graphs_error=backward_graphs[1],
    )
    _compare(result, recordings, spec, handover)
    return result


def _backward_graphs(workload: Workload, count: bool) -> Tuple[Optional[int], Optional[str]]:
    """(backward graphs, None) or (None, why they could not be counted); (None, None) when not
    ``count``."""
    if not count:
        return None, None
    try:
        graphs = count_backward_graphs(
            workload.model, lambda output: backward(output, {}), *workload.args, **workload.kwargs
        )
    except Exception as error:  # counting is a measurement: its failure is reported, not fatal
        return None, describe_failure(error)
    return graphs, None


def _compare(
    result: ArmResult, recordings: Dict[str, List[CallRecord]], spec: ArmSpec, handover: Path
) -> None:
    """Step 7: fill ``result``'s comparisons (the original arm saves its recordings first)."""
    import torch

    if spec.role == ORIGINAL:
        saved = {mode: [vars(record) for record in records] for mode, records in recordings.items()}
        torch.save(saved, handover / _RECORDINGS)
        result.behaviour = [
            compare_behaviour(
                recordings[EAGER],
                recordings[COMPILED],
                ("eager original", "compiled original"),
                gradients=spec.grad,
            )
        ]
        return
    saved = torch.load(handover / _RECORDINGS, weights_only=True)
    original = {mode: [CallRecord(**fields) for fields in calls] for mode, calls in saved.items()}
    result.behaviour = [
        compare_behaviour(
            original[EAGER],
            recordings[COMPILED],
            ("eager original", "compiled fixed"),
            trap_documented=True,
            gradients=spec.grad,
        ),
        compare_behaviour(
            original[EAGER],
            recordings[EAGER],
            ("eager original", "eager fixed"),
            gradients=spec.grad,
        ),
    ]
    if FUNCTIONAL in recordings:
        result.behaviour.append(
            compare_behaviour(
                original[EAGER],
                recordings[FUNCTIONAL],
                ("eager original", f"compiled fixed, {FUNCTIONAL_BACKEND}"),
                trap_documented=True,
                gradients=spec.grad,
            )
        )
    expected, actual = original[COMPILED][0], recordings[COMPILED][0]
    if expected.output is not None and actual.output is not None:
        result.comparison = compare_outputs(expected.output, actual.output)
        if spec.grad and not (expected.exception or actual.exception):
            result.gradient_comparison = compare_gradients(
                [expected], [actual], ("compiled original", "compiled fixed")
            )


def _hand_over(workload: Workload, role: str, folder: Path) -> None:
    """Original arm: save weights and inputs. Fixed arm: load them into its own workload."""
    import torch

    module = workload.model if isinstance(workload.model, torch.nn.Module) else None
    if role == ORIGINAL:
        if module is not None:
            torch.save(module.state_dict(), folder / _WEIGHTS)
        try:
            torch.save({"args": workload.args, "kwargs": workload.kwargs}, folder / _INPUTS)
        except Exception as error:
            raise VerifyError(
                f"the inputs cannot be saved for the fixed arm ({summarize_exception(error)}); "
                "return tensors and picklable values from the factory"
            ) from None
        return
    if module is not None and (folder / _WEIGHTS).is_file():
        try:
            module.load_state_dict(
                torch.load(folder / _WEIGHTS, weights_only=True), strict=True
            )
        except RuntimeError as error:
            raise VerifyError(
                "the fixed model does not take the original's weights: "
                + summarize_exception(error)
            ) from None
    inputs = torch.load(folder / _INPUTS, weights_only=False)
    if not _same_inputs((inputs["args"], inputs["kwargs"]), (workload.args, workload.kwargs)):
        workload.args, workload.kwargs = inputs["args"], inputs["kwargs"]


def _same_inputs(saved: Any, built: Any) -> bool:
    """Whether the fixed arm's factory built the inputs the original arm saved (same leaves,
    tensors bitwise): then its own are used, which keeps what saving loses (a tensor that
    autograd computed stays a non-leaf, so its ``.grad`` stays None as in the original)."""
    import torch

    expected, actual = list(leaves(saved, "inputs")), list(leaves(built, "inputs"))
    if [path for path, _ in expected] != [path for path, _ in actual]:
        return False
    for (_, want), (_, got) in zip(expected, actual):
        if isinstance(want, torch.Tensor) != isinstance(got, torch.Tensor):
            return False
        if isinstance(want, torch.Tensor):
            if tensor_difference(want.detach().cpu(), got.detach().cpu())[0] is not None:
                return False
            if want.requires_grad != got.requires_grad or want.layout != got.layout:
                return False
            if want.layout == torch.strided and want.stride() != got.stride():
                return False
        elif repr(want) != repr(got):
            return False
    return True


def _on_device(workload: Workload, device: str) -> Workload:
    import torch

    model = (
        workload.model.to(device) if isinstance(workload.model, torch.nn.Module) else workload.model
    )
    args, kwargs = move_to((workload.args, workload.kwargs), device)
    return Workload(model, args, kwargs)


def _code(role: str) -> str:
    return "the model" if role == ORIGINAL else "the fixed code"


def _time(
    workload: Workload, report: CompileReport, probe_s: float, spec: ArmSpec, device: str
) -> Timings:
    """Time the chosen backend. The counting backend runs graphs eagerly, so for ``eager`` the
    probe's compile and first call are the cold call, and later calls reuse its compiled model."""
    import torch

    def calling(compiled: Any) -> Any:
        return lambda: compiled(*workload.args, **workload.kwargs)

    try:
        if spec.backend == "eager":
            return time_after_first_call(calling(report.compiled), device, spec.repeat, probe_s)
        torch._dynamo.reset()
        compiled = torch.compile(workload.model, backend=spec.backend, mode=spec.mode)
        return time_calls(calling(compiled), device, spec.repeat)
    except Exception as error:
        raise VerifyError(
            f"the {spec.backend!r} backend fails on {_code(spec.role)}: {describe_failure(error)}"
        ) from None


def main(argv: List[str]) -> int:
    """Run the arm described by the JSON file ``argv[0]`` and write its result file."""
    spec = ArmSpec(**json.loads(Path(argv[0]).read_text(encoding="utf-8")))
    try:
        payload: Dict[str, Any] = run_arm(spec).to_json()
    except VerifyError as error:
        payload = {"error": str(error)}
    Path(spec.result_path).write_text(json.dumps(payload, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
