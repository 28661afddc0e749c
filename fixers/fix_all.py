"""FixAll: every fixable GM finding, [Trap], [Where] and [Defer], in one pass over the module."""

from __future__ import annotations

from flake8_graphmend.engine import Finding
from flake8_graphmend.registry import CODES_BY_FIXER

from .base import GraphMendCommand


class FixAll(GraphMendCommand):
    """Fix every fixable GM finding: [Trap] guards, [Where] predication and [Defer] side effects."""

    DESCRIPTION = __doc__.splitlines()[0]
    CODES = frozenset(code for codes in CODES_BY_FIXER.values() for code in codes)

    def declined(self, finding: Finding, reason: str) -> None:
        """Not said of a finding that a fix of this run rewrites along with its own site (a
        print in an `if` that [Defer] takes as a whole): it is fixed."""
        position = (finding.line, finding.col)
        covered = (t.plan.covers() for t in self._targets.values() if t.plan is not None)
        if not any(position in sites for sites in covered):
            super().declined(finding, reason)
