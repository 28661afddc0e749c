"""Device choice and the latency of compiled calls.

- cold: wall time of the first compiled call (Dynamo tracing, backend compilation and one run);
- warm: median wall time of ``repeat`` later calls, after ``SETTLE_CALLS`` untimed calls (CUDA
  graphs under ``mode="reduce-overhead"`` are recorded on those);
- compile: cold minus warm, what the first call costs beyond a steady-state one.

On CUDA the device is synchronised before and after every timed call.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable, Tuple

from .errors import VerifyError

SETTLE_CALLS = 2


@dataclass
class Timings:
    """Seconds: compile (= cold - warm), cold (first call), warm (median of ``warm_calls``)."""

    compile_s: float
    cold_s: float
    warm_median_s: float
    warm_calls: int


def resolve_device(requested: str) -> str:
    """``auto`` is CUDA when available, else CPU; ``cuda`` without a GPU is an error."""
    import torch

    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested == "cuda" and not torch.cuda.is_available():
        raise VerifyError("--device cuda was requested, but torch.cuda.is_available() is False")
    return requested


def move_to(value: Any, device: str) -> Any:
    """``value`` with every tensor (in tuples, lists and dicts) moved to ``device``; a leaf
    tensor that requires grad stays a leaf that requires grad (its ``.grad`` is recorded)."""
    import torch
    from torch.utils import _pytree

    def moved(leaf: Any) -> Any:
        if not isinstance(leaf, torch.Tensor):
            return leaf
        copy = leaf.to(device)
        if copy is not leaf and leaf.is_leaf and leaf.requires_grad:
            copy = copy.detach().requires_grad_()
        return copy

    return _pytree.tree_map(moved, value)


def time_calls(call: Callable[[], Any], device: str, repeat: int) -> Timings:
    """Time the first call of a freshly compiled ``call``, then its steady state."""
    _, cold_s = timed(call, device)
    return time_after_first_call(call, device, repeat, cold_s)


def time_after_first_call(
    call: Callable[[], Any], device: str, repeat: int, cold_s: float
) -> Timings:
    """Complete ``Timings`` for a ``call`` whose first call took ``cold_s``."""
    for _ in range(SETTLE_CALLS):
        call()
    warm = statistics.median([timed(call, device)[1] for _ in range(repeat)])
    return Timings(
        compile_s=max(cold_s - warm, 0.0), cold_s=cold_s, warm_median_s=warm, warm_calls=repeat
    )


def timed(call: Callable[[], Any], device: str) -> Tuple[Any, float]:
    """``call()``'s result and its wall time in seconds, the device synchronised around it."""
    _synchronize(device)
    start = time.perf_counter()
    result = call()
    _synchronize(device)
    return result, time.perf_counter() - start


def _synchronize(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()
