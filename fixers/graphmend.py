"""The codemod commands, for libcst's `graphmend.<Command>` lookup (``modules: [fixers]``)."""

from .defer import DeferSideEffects
from .fix_all import FixAll
from .trap import TrapGuards
from .where import PredicateControlFlow

__all__ = ["DeferSideEffects", "FixAll", "PredicateControlFlow", "TrapGuards"]
