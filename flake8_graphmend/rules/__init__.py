"""The detectors, one module per family, dispatched by node type from one walk per function."""

from . import control_flow, other, scalars, shapes, side_effects
from .base import Finding, FunctionContext

#: Detectors of calls: ``(call, enclosing statement, context) -> findings``.
CALL_DETECTORS = (
    side_effects.check_call,
    control_flow.check_call,
    scalars.check_call,
    shapes.check_call,
    other.check_call,
)
#: Detectors of subscripts: ``(subscript, context) -> findings``.
SUBSCRIPT_DETECTORS = (scalars.check_subscript, shapes.check_subscript)
#: Detectors of statements (their own stores): ``(statement, context) -> findings``.
STATEMENT_DETECTORS = (other.check_statement,)

__all__ = [
    "CALL_DETECTORS", "STATEMENT_DETECTORS", "SUBSCRIPT_DETECTORS", "Finding", "FunctionContext",
    "control_flow",
]
