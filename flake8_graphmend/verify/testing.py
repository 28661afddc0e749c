"""A pytest helper for CI gates: fail a test when compiled code has more graph breaks than allowed.

    from flake8_graphmend.verify.testing import assert_graph_breaks

    def test_block_compiles_whole():
        model, args = build()
        assert_graph_breaks(model, *args, max_breaks=0)

Break events are counted as ``probe`` counts them (see ``dynamo``): a break before the first
tensor op counts although the call still yields one graph.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from .dynamo import CompileReport, probe


def assert_graph_breaks(
    fn: Callable[..., Any],
    *args: Any,
    max_breaks: int = 0,
    max_graphs: Optional[int] = None,
    **kwargs: Any,
) -> CompileReport:
    """Compile ``fn`` (counting backend), call it once, and fail listing the break sites and GB ids
    when it has more than ``max_breaks`` break events or more than ``max_graphs`` graphs.
    Returns the report for further checks."""
    report = probe(fn, *args, **kwargs)
    limits = []
    if report.breaks > max_breaks:
        limits.append(f"{report.breaks} graph break events, more than the {max_breaks} allowed")
    if max_graphs is not None and report.graphs > max_graphs:
        limits.append(f"{report.graphs} graphs, more than the {max_graphs} allowed")
    if limits:
        sites = "".join(
            f"\n  {site}" + (f" (x{events})" if events > 1 else "")
            for site, events in report.site_counts().items()
        )
        raise AssertionError(f"torch.compile gives {' and '.join(limits)}; break sites:{sites}")
    return report
