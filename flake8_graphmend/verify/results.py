"""What an arm measures, as passed from the arm process to the runner (JSON)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional

from .behaviour import BehaviourComparison, PartComparison
from .compare import OutputComparison
from .timing import Timings


@dataclass
class SiteResult:
    """A distinct break site with its number of events and the GM findings at its line
    (``lint_error`` says why there are none when its file could not be linted)."""

    file: str
    line: int
    gb_id: Optional[str]
    gb_type: str
    reason: str
    events: int
    findings: List[Dict[str, Any]] = field(default_factory=list)
    lint_error: Optional[str] = None


@dataclass
class ArmResult:
    """One arm: graphs and break events of the first compiled call, fullgraph, timings (None when
    a compiled call raises), what each call raised per mode (``eager``, ``compiled``: ``Type:
    message (at file:line)`` or None), the comparison of its first compiled output with the
    original's (fixed arm, when both returned) and its behaviour comparisons (see ``_arm``).
    With ``--grad``: the backward graphs (None, and why, when they could not be counted; None
    without ``--grad`` or when a compiled call raised) and the comparison of the first compiled
    call's gradients with the original's (fixed arm, when both calls ran without exception)."""

    device: str
    torch_version: str
    graphs: int
    breaks: int
    break_sites: List[SiteResult]
    fullgraph_error: Optional[str]
    timings: Optional[Timings]
    exceptions: Dict[str, List[Optional[str]]] = field(default_factory=dict)
    comparison: Optional[OutputComparison] = None
    behaviour: List[BehaviourComparison] = field(default_factory=list)
    backward_graphs: Optional[int] = None
    backward_graphs_error: Optional[str] = None
    gradient_comparison: Optional[PartComparison] = None
    #: The calls of the program's own code in the graphs of the first compiled call
    #: (``dynamo.compiled_calls``); None in results written before it was counted.
    compiled_calls: Optional[int] = None

    def to_json(self) -> Dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> ArmResult:
        comparison, timings = data.get("comparison"), data.get("timings")
        gradients = data.get("gradient_comparison")
        return cls(
            **{
                **data,
                "break_sites": [SiteResult(**site) for site in data["break_sites"]],
                "timings": Timings(**timings) if timings else None,
                "comparison": OutputComparison(**comparison) if comparison else None,
                "behaviour": [BehaviourComparison.from_json(b) for b in data.get("behaviour", [])],
                "gradient_comparison": PartComparison(**gradients) if gradients else None,
            }
        )
