"""FixAll: every fixable GM finding, [Trap], [Where] and [Defer], in one pass over the module."""

from __future__ import annotations

from flake8_graphmend.registry import CODES_BY_FIXER

from .base import GraphMendCommand


class FixAll(GraphMendCommand):
    """Fix every fixable GM finding: [Trap] guards, [Where] predication and [Defer] side effects."""

    DESCRIPTION = __doc__.splitlines()[0]
    CODES = frozenset(code for codes in CODES_BY_FIXER.values() for code in codes)
