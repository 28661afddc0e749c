"""What an arm measures, as passed from the arm process to the runner (JSON)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from .compare import OutputComparison
from .timing import Timings


@dataclass
class SiteResult:
    """A distinct break site with its number of events and the GM findings at its line
    (``lint_error`` says why there are none when its file could not be linted)."""

    file: str
    line: int
    gb_id: str | None
    gb_type: str
    reason: str
    events: int
    findings: list[dict[str, Any]] = field(default_factory=list)
    lint_error: str | None = None


@dataclass
class ArmResult:
    """One arm: graphs and break events of the first compiled call, fullgraph, timings, outputs."""

    device: str
    torch_version: str
    graphs: int
    breaks: int
    break_sites: list[SiteResult]
    fullgraph_error: str | None
    timings: Timings
    comparison: OutputComparison | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ArmResult:
        comparison = data.get("comparison")
        return cls(
            **{
                **data,
                "break_sites": [SiteResult(**site) for site in data["break_sites"]],
                "timings": Timings(**data["timings"]),
                "comparison": OutputComparison(**comparison) if comparison else None,
            }
        )
