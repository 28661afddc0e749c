"""Fix planning: which findings may be rewritten, and how (the legality side of a fix).

The detectors in ``rules/`` say *what* breaks a graph; the planners here decide whether the
paired fix keeps the program's whole behaviour and, when it does, return a typed plan: the
facts the fixer in ``fixers/`` needs to rewrite the site, and nothing it would have to derive
again. A planner returns ``(plan, None)`` or ``(None, reason)``; the reason becomes the
finding's ``declines:`` text. See docs/architecture.md.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, FrozenSet, List, Optional, Tuple, TypeVar, Union

if TYPE_CHECKING:
    from ..rules.base import FunctionContext

#: A place in the file as findings give it: 1-based line, 0-based column in characters.
Position = Tuple[int, int]


def position(node: Union[ast.stmt, ast.expr], ctx: "FunctionContext") -> Position:
    """Where a finding at ``node`` is (columns in characters, ast's in UTF-8 bytes)."""
    text = ctx.lines[node.lineno - 1].encode("utf-8")[: node.col_offset]
    return node.lineno, len(text.decode("utf-8", errors="ignore"))


def formatted_values(message: ast.JoinedStr) -> List[ast.FormattedValue]:
    """The formatted values of an f-string, in order (the index plans count them by)."""
    return [piece for piece in message.values if isinstance(piece, ast.FormattedValue)]


@dataclass(frozen=True)
class Plan:
    """Base of the plans: what one fixer needs to rewrite one site (a dataclass per fix shape)."""

    #: The fix puts the ordered custom op of the deferred calls into the graph
    #: (``aliasing.graph_input_update`` says where it may not).
    ordered: ClassVar[bool] = False

    def caveat(self) -> Optional[str]:
        """What the fix leaves as it was at this site (said with the finding and by the
        codemod), or None when it leaves nothing."""
        return None

    def covers(self) -> FrozenSet[Position]:
        """The sites of other findings that this fix rewrites along with its own (a run that
        applies it fixes them too), by position."""
        return frozenset()


PlanT = TypeVar("PlanT", bound=Plan)

#: What a planner returns: a plan, or why the site is not fixed.
Planned = Tuple[Optional[PlanT], Optional[str]]


def declined(reason: str) -> Tuple[None, str]:
    """The planner's answer for a site it does not fix."""
    return None, reason
