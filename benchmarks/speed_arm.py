"""One timed process of ``benchmarks/speed.py``: one arm of one row, from a cold start.

``speed.py`` runs ``python benchmarks/speed_arm.py SPEC.json`` with empty Inductor and Triton
cache folders and Inductor's caches turned off (see its docstring). The process:

1. prepares the workload as ``graphmend verify``'s arms do (``verify._arm.prepare``): the fixed
   arm installs the overlay finder (imports load the rewritten copies), the factory is called
   after seeding, the original arm saves weights and inputs and the fixed arm loads them;
2. eager: ``SETTLE_CALLS`` untimed calls, then ``eager_calls`` timed ones;
3. compiled: ``torch._dynamo.reset()``, ``torch.compile(model, backend="inductor", mode=mode)``;
   the first call is timed (compile and first run) with Dynamo's compile-time counters
   (``torch._dynamo.utils.calculate_time_spent``) read before and after it, then the second
   (``reduce-overhead`` records its CUDA graphs there); then ``SETTLE_CALLS`` untimed calls and
   ``warm_calls`` timed ones, and the counters again (compiling after the first call is a
   recompile);
4. with ``probe``: graphs and break events of the runner's counting probe
   (``verify.dynamo.probe``), after the timings; and the outputs checked across the arms. The
   original arm saves its last eager output and its first compiled output in the hand-over
   folder; the fixed arm, which runs after it in the probed repetition, compares its own with
   them bit for bit (``verify.compare``): ``outputs`` holds the verdicts and the largest
   difference of the compiled outputs.

A call is the forward call under ``torch.no_grad()``; with ``grad`` the gradients are cleared, the
forward call runs with autograd on and a backward pass of ``verify.gradients``' scalar follows.
Each call is timed by ``verify.timing.timed`` (on CUDA the device is synchronised around it). The
result file holds seconds (``Sample``), or ``{"error": "one line"}``.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from a checkout
    sys.path.insert(0, str(ROOT))

from flake8_graphmend.verify.timing import SETTLE_CALLS, timed  # noqa: E402

COMPILE_TOTAL = "total_wall_time"
"""Dynamo's counter of frame compiles plus backward compiles (``calculate_time_spent``)."""


@dataclass
class ProcessSpec:
    """What ``speed.py`` asks of one process: the arm (``verify._arm.ArmSpec`` fields)."""

    arm: Dict[str, Any]
    result_path: str
    eager_calls: int = 10
    warm_calls: int = 20
    probe: bool = False


@dataclass
class Sample:
    """One process's measurements, in seconds. ``compile_s`` is the first compiled call;
    ``torch_compile_s`` Dynamo's own compile time within it (None when torch does not count it)
    and ``cold_s`` the first call without it; ``second_s`` the second call (where
    ``reduce-overhead`` records its CUDA graphs); ``recompile_s`` what Dynamo compiled
    afterwards."""

    device: str
    threads: int
    eager_s: List[float]
    compile_s: float
    torch_compile_s: Optional[float]
    cold_s: Optional[float]
    compile_phases_s: Dict[str, float]
    warm_s: List[float]
    recompile_s: Optional[float]
    graphs: Optional[int] = None
    break_events: Optional[int] = None
    device_name: str = ""
    outputs: Optional[Dict[str, Any]] = None
    second_s: Optional[float] = None


Flat = Tuple[Dict[str, Any], Dict[str, str]]
"""An output as ``verify.compare.flatten_output`` gives it: tensors (on the CPU) and reprs."""

OUTPUTS_FILE = "speed-outputs.pt"
"""The original arm's flattened eager and compiled outputs, in the hand-over folder."""


def measure(spec: ProcessSpec) -> Sample:
    """Steps 1 to 4 of the module docstring."""
    import torch

    from flake8_graphmend.verify._arm import ArmSpec, prepare
    from flake8_graphmend.verify.compare import flatten_output
    from flake8_graphmend.verify.dynamo import probe
    from flake8_graphmend.verify.gradients import gradient_targets

    arm = ArmSpec(**spec.arm)
    workload, device = prepare(arm)
    model, args, kwargs = workload.model, workload.args, workload.kwargs
    targets = gradient_targets(model, args, kwargs) if arm.grad else None
    with torch.set_grad_enabled(arm.grad):
        eager_output, eager_s = _timed_calls(
            _step(model, workload, targets), device, spec.eager_calls
        )
        torch._dynamo.reset()
        compiled = _step(
            torch.compile(model, backend="inductor", mode=arm.mode), workload, targets
        )
        before = _compile_counters()
        compiled_output, compile_s = timed(compiled, device)
        after_first = _compile_counters()
        # copied now, when probing: a CUDA graph replay may overwrite an earlier output's tensors
        compiled_flat = flatten_output(compiled_output) if spec.probe else None
        second_s = timed(compiled, device)[1]  # reduce-overhead: the CUDA graphs' recording
        warm_s = _timed_calls(compiled, device, spec.warm_calls)[1]
        recompiled = _difference(_compile_counters(), after_first)
        report = probe(model, *args, **kwargs) if spec.probe else None
    outputs = None
    if compiled_flat is not None:
        outputs = check_outputs(
            arm, Path(arm.handover_dir), flatten_output(eager_output), compiled_flat
        )
    phases = _difference(after_first, before)
    torch_compile_s = phases.get(COMPILE_TOTAL)
    return Sample(
        device=device,
        threads=torch.get_num_threads(),
        eager_s=eager_s,
        compile_s=compile_s,
        torch_compile_s=torch_compile_s,
        cold_s=None if torch_compile_s is None else max(compile_s - torch_compile_s, 0.0),
        compile_phases_s=phases,
        second_s=second_s,
        warm_s=warm_s,
        recompile_s=recompiled.get(COMPILE_TOTAL),
        graphs=report.graphs if report else None,
        break_events=report.breaks if report else None,
        device_name=torch.cuda.get_device_name() if device.startswith("cuda") else "",
        outputs=outputs,
    )


def check_outputs(
    arm: Any, handover: Path, eager: Flat, compiled: Flat
) -> Optional[Dict[str, Any]]:
    """Original arm: save both flattened outputs (None returned). Fixed arm: its eager and
    compiled outputs against the original's, bit for bit: ``eager_equal``, ``compiled_equal``
    and the compiled outputs' ``compiled_max_abs_diff``."""
    import torch

    from flake8_graphmend.verify._arm import ORIGINAL
    from flake8_graphmend.verify.compare import compare_outputs

    flat = {"eager": eager, "compiled": compiled}
    if arm.role == ORIGINAL:
        torch.save(flat, handover / OUTPUTS_FILE)
        return None
    original = torch.load(handover / OUTPUTS_FILE, weights_only=True)
    eager_check = compare_outputs(original["eager"], eager)
    compiled_check = compare_outputs(original["compiled"], compiled)
    return {
        "eager_equal": eager_check.equal,
        "compiled_equal": compiled_check.equal,
        "compiled_max_abs_diff": compiled_check.max_abs_diff,
        "differences": eager_check.differences + compiled_check.differences,
    }


def _step(fn: Callable[..., Any], workload: Any, targets: Optional[Dict[str, Any]]) -> Any:
    """One timed call of ``fn`` on the workload's inputs (with ``targets``: and its backward)."""
    from flake8_graphmend.verify.gradients import backward, clear_gradients

    def call() -> Any:
        if targets is None:
            return fn(*workload.args, **workload.kwargs)
        clear_gradients(targets)
        output = fn(*workload.args, **workload.kwargs)
        backward(output, {})
        return output

    return call


def _timed_calls(call: Callable[[], Any], device: str, count: int) -> Tuple[Any, List[float]]:
    """``SETTLE_CALLS`` untimed calls, then ``count`` timed ones: the last output, the wall
    times."""
    for _ in range(SETTLE_CALLS):
        call()
    output, seconds = None, []
    for _ in range(count):
        output, elapsed = timed(call, device)
        seconds.append(elapsed)
    return output, seconds


def _compile_counters() -> Dict[str, float]:
    """Dynamo's cumulative compile-time counters by phase (empty where torch has none)."""
    try:
        from torch._dynamo.utils import calculate_time_spent
    except ImportError:
        return {}
    return dict(calculate_time_spent())


def _difference(after: Dict[str, float], before: Dict[str, float]) -> Dict[str, float]:
    return {phase: seconds - before.get(phase, 0.0) for phase, seconds in after.items()}


def main(argv: List[str]) -> int:
    """Measure the process described by the JSON file ``argv[0]``; write its result file."""
    from flake8_graphmend.verify.entry import describe_failure
    from flake8_graphmend.verify.errors import VerifyError

    spec = ProcessSpec(**json.loads(Path(argv[0]).read_text(encoding="utf-8")))
    try:
        payload: Dict[str, Any] = asdict(measure(spec))
    except VerifyError as error:
        payload = {"error": str(error)}
    except Exception as error:  # the workload's failure is this sample's result
        payload = {"error": describe_failure(error)}
    Path(spec.result_path).write_text(json.dumps(payload, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
