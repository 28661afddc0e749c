"""FixAll: the three fixers, one after the other, each on the code the previous one produced."""

from __future__ import annotations

import libcst as cst
from libcst.codemod import SkipFile

from .base import GraphMendCommand, SourceNotAnalysed
from .defer import DeferSideEffects
from .trap import TrapGuards
from .where import PredicateControlFlow

#: In the order they run; each one analyses the code that the previous one left.
FIXERS = (TrapGuards, PredicateControlFlow, DeferSideEffects)


class FixAll(GraphMendCommand):
    """Fix every fixable GM finding: [Trap] guards, [Where] predication and [Defer] side effects."""

    DESCRIPTION = __doc__.splitlines()[0]

    def transform_module(self, tree: cst.Module) -> cst.Module:
        """Run each fixer in turn; skip the file when none of them rewrote anything."""
        self.fixed_count = 0
        analyses: dict = {}
        for fixer_class in FIXERS:
            fixer = fixer_class(self.context, options=self.options, analyses=analyses)
            try:
                tree = fixer.transform_module(tree)
            except SourceNotAnalysed:
                raise
            except SkipFile:
                continue
            self.fixed_count += fixer.fixed_count
        if not self.fixed_count:
            raise SkipFile("nothing was rewritten")
        return tree
