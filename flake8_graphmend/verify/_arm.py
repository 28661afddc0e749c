"""One arm of `graphmend verify`, run as ``python -m flake8_graphmend.verify._arm SPEC.json``.

The runner starts each arm in a fresh process with private Inductor and Triton cache folders.
An arm:

1. (fixed arm) installs the overlay finder, so imports load the rewritten copies;
2. seeds torch and calls the entry's factory;
3. hands weights and inputs over: the original arm saves the model's ``state_dict`` and the
   inputs, the fixed arm loads that ``state_dict`` with ``strict=True`` and uses those inputs
   (a model that is not an ``nn.Module`` has no weights to hand over);
4. moves model and inputs to the device and, under ``torch.no_grad()`` unless ``grad`` is set,
   runs the model once eagerly: that shows a model that fails eagerly, and it fills lazily
   built module caches before anything is captured (CUDA graphs must not capture them);
5. reseeds and probes the first compiled call with the counting backend (graphs, break sites,
   output);
6. times the calls: with the ``eager`` backend, the probe's call is the cold call and the
   probe's compiled model is called again (the counting backend runs graphs eagerly too);
   with another backend, Dynamo is reset and the model compiled afresh with it and the mode;
   then checks ``fullgraph=True`` with the eager backend;
7. saves the probe's output (original arm) or compares it bit for bit with the original's
   (fixed arm): the outputs compared are those of the captured graphs run eagerly, whatever
   ``--backend`` is timed.

It writes an ``ArmResult`` as JSON, or ``{"error": "one line"}`` when a step fails.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .compare import compare_outputs, flatten_output
from .dynamo import CompileReport, fullgraph_error, probe, summarize_exception
from .entry import Workload, describe_failure, load_workload
from .errors import VerifyError
from .overlay import OverlayFinder
from .results import ArmResult, SiteResult
from .timing import Timings, move_to, resolve_device, time_after_first_call, time_calls, timed

ORIGINAL, FIXED = "original", "fixed"
_WEIGHTS, _INPUTS, _OUTPUTS = "weights.pt", "inputs.pt", "outputs.pt"


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
    mode: str | None = None
    grad: bool = False
    seed: int = 0
    repeat: int = 20
    copies: dict[str, str] = field(default_factory=dict)


def run_arm(spec: ArmSpec) -> ArmResult:
    """Steps 1 to 7 of the module docstring."""
    import torch

    if spec.role == FIXED:
        OverlayFinder(spec.copies).install()
    sys.path.insert(0, str(Path(spec.entry_shown).resolve().parent))
    device = resolve_device(spec.device)
    handover = Path(spec.handover_dir)

    torch.manual_seed(spec.seed)
    workload = load_workload(Path(spec.entry_source), spec.factory, spec.entry_shown)
    _hand_over(workload, spec.role, handover)
    workload = _on_device(workload, device)

    with torch.set_grad_enabled(spec.grad):
        _run_eagerly(workload, spec.role)
        torch.manual_seed(spec.seed)
        report, probe_s = timed(lambda: _probe(workload, spec.role), device)
        output = flatten_output(report.output)  # copied now: later calls may reuse its storage
        timings = _time(workload, report, probe_s, spec, device)
        fullgraph = fullgraph_error(workload.model, *workload.args, **workload.kwargs)

    comparison = None
    if spec.role == ORIGINAL:
        torch.save(output, handover / _OUTPUTS)
    else:
        comparison = compare_outputs(torch.load(handover / _OUTPUTS, weights_only=True), output)

    sites = [
        SiteResult(site.filename, site.lineno, site.gb_id, site.gb_type, site.reason, events)
        for site, events in report.site_counts().items()
    ]
    return ArmResult(
        device=device,
        torch_version=torch.__version__,
        graphs=report.graphs,
        breaks=report.breaks,
        break_sites=sites,
        fullgraph_error=fullgraph,
        timings=timings,
        comparison=comparison,
    )


def _hand_over(workload: Workload, role: str, folder: Path) -> None:
    """Original arm: save weights and inputs. Fixed arm: load them into its own workload."""
    import torch

    is_module = isinstance(workload.model, torch.nn.Module)
    if role == ORIGINAL:
        if is_module:
            torch.save(workload.model.state_dict(), folder / _WEIGHTS)
        try:
            torch.save({"args": workload.args, "kwargs": workload.kwargs}, folder / _INPUTS)
        except Exception as error:
            raise VerifyError(
                f"the inputs cannot be saved for the fixed arm ({summarize_exception(error)}); "
                "return tensors and picklable values from the factory"
            ) from None
        return
    if is_module and (folder / _WEIGHTS).is_file():
        try:
            workload.model.load_state_dict(
                torch.load(folder / _WEIGHTS, weights_only=True), strict=True
            )
        except RuntimeError as error:
            raise VerifyError(
                "the fixed model does not take the original's weights: "
                + summarize_exception(error)
            ) from None
    inputs = torch.load(folder / _INPUTS, weights_only=False)
    workload.args, workload.kwargs = inputs["args"], inputs["kwargs"]


def _on_device(workload: Workload, device: str) -> Workload:
    import torch

    model = (
        workload.model.to(device) if isinstance(workload.model, torch.nn.Module) else workload.model
    )
    args, kwargs = move_to((workload.args, workload.kwargs), device)
    return Workload(model, args, kwargs)


def _code(role: str) -> str:
    return "the model" if role == ORIGINAL else "the fixed code"


def _run_eagerly(workload: Workload, role: str) -> None:
    try:
        workload()
    except Exception as error:
        raise VerifyError(
            f"{_code(role)} fails when run eagerly: {describe_failure(error)}"
        ) from None


def _probe(workload: Workload, role: str) -> CompileReport:
    try:
        return probe(workload.model, *workload.args, **workload.kwargs)
    except Exception as error:
        raise VerifyError(
            f"torch.compile fails on {_code(role)}: {describe_failure(error)}"
        ) from None


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


def main(argv: list[str]) -> int:
    """Run the arm described by the JSON file ``argv[0]`` and write its result file."""
    spec = ArmSpec(**json.loads(Path(argv[0]).read_text(encoding="utf-8")))
    try:
        payload: dict[str, Any] = run_arm(spec).to_json()
    except VerifyError as error:
        payload = {"error": str(error)}
    Path(spec.result_path).write_text(json.dumps(payload, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
