"""Record what a workload's calls do, and compare two recordings part by part.

A recording is a few calls in a row (``record_calls``); each call gives a ``CallRecord``:

- values: the output, flattened and copied as ``compare.flatten_output`` does (None if it raised);
- state: after the call, returned or raised, what outlives it, flattened alike: the model's
  buffers, parameters and plain attributes and the inputs (an update in place that a failing
  check inside a graph would lose shows here), with the aliasing of those tensors and the
  output's (a buffer registered anew, an output that is an input or a view of one);
- exceptions: the type (module-qualified, builtins bare) and ``str()`` of what the call raised
  (and, for the report only, ``entry.describe_failure``'s one line, which says where);
- stdout, stderr: the text written to ``sys.stdout`` and ``sys.stderr`` (``redirect_stdout`` and
  ``redirect_stderr``): not writes to the file descriptors (C code) nor those of a handler that
  holds the original stream (logging's ``StreamHandler``), hence log records on their own;
- logs: (logger, level, ``getMessage()``) of each record that reaches the root logger or a logger
  that does not propagate (transformers' own), other than torch's (Dynamo's diagnostics, which an
  eager run never writes). A handler at level NOTSET records them; logger levels stay as the
  program set them, so what the program filters out is not recorded;
- warnings: (category, message) of each warning shown under the program's own filters
  (``warnings.catch_warnings(record=True)`` keeps them), in order, repeats included;
- gradients (``--grad`` only): each call is followed by a backward pass on a fixed weighted sum
  of its output tensors, after which the gradients of the model's parameters and of the inputs
  that require grad are recorded, None where there is none (``gradients`` says exactly how). An
  exception raised by the backward pass is the call's exception, marked as raised in backward.

"Once" state: a recording starts as a fresh process would. Entering ``catch_warnings`` makes every
module forget the warnings its ``__warningregistry__`` holds (the ``default`` and ``module``
actions), but not ``warnings.onceregistry`` (the ``once`` action): that is cleared here, and so
are the caches of lru_cache'd methods of ``logging.Logger`` (transformers' ``warning_once`` and
``info_once``). Other once-only state (C++ ``TORCH_WARN_ONCE``, a program's own caches) is not
reset. The calls of a recording share the state, so a message shown once is in the first call's
record only, as in the program.

Two recordings compare part by part (``PARTS``; ``gradients`` only when asked for). Two
differences are documented rather than failures: a [Trap] fix makes a failing guard raise
``RuntimeError(message)`` under compile where the original raised another type with the same
message; gradients that differ only in the sign of zero (-0.0 against 0.0).
"""

from __future__ import annotations

import contextlib
import difflib
import io
import logging
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple

from . import gradients as grads
from .compare import compare_outputs, flatten_output, leaves
from .entry import describe_failure

PARTS = ("values", "state", "exceptions", "stdout", "stderr", "logs", "warnings", "gradients")
TRAP_DIFFERENCE = "[Trap]: RuntimeError under compile"
_TRAP_ERROR = "RuntimeError"
_SHOWN_CHARACTERS = 160

LogItem = Tuple[str, str, str]
"""(logger name, level name, message)"""
WarningItem = Tuple[str, str]
"""(category, message)"""


@dataclass
class CallRecord:
    """What one call did (see the module docstring)."""

    output: Optional[Tuple[Dict[str, Any], Dict[str, str]]] = None
    state: Optional[Tuple[Dict[str, Any], Dict[str, str]]] = None
    exception: Optional[Tuple[str, str]] = None
    failure: Optional[str] = None
    stdout: str = ""
    stderr: str = ""
    logs: List[LogItem] = field(default_factory=list)
    warnings: List[WarningItem] = field(default_factory=list)
    backward: Optional[str] = None  # gradients.DONE, NO_OUTPUT, RAISED; None: not run
    gradients: Optional[grads.Gradients] = None


def record_calls(
    calls: Sequence[Callable[[], Any]],
    targets: Optional[Dict[str, Any]] = None,
    state: Optional[Callable[[], Any]] = None,
) -> List[CallRecord]:
    """Make ``calls`` in turn from a fresh "once" state, recording each; an exception that a call
    raises is recorded, not raised. With ``targets`` (``gradients.gradient_targets``), each call
    is followed by its backward pass and the targets' gradients are recorded; with ``state``,
    what it returns is recorded after each call (the tensors that outlive the call)."""
    _forget_once_state()
    records: List[CallRecord] = []
    with warnings.catch_warnings(record=True) as shown, _recorded_logs() as logs:
        for call in calls:
            shown.clear()
            logs.clear()
            record = CallRecord()
            stdout, stderr = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
                output = _call(call, record, targets)
            if state is not None:
                beside = [] if record.output is None else list(leaves(output, "output"))
                record.state = flatten_output(state(), "state", beside)
            record.stdout, record.stderr = stdout.getvalue(), stderr.getvalue()
            record.logs = list(logs)
            record.warnings = [(_qualified_name(w.category), str(w.message)) for w in shown]
            records.append(record)
    return records


def _call(call: Callable[[], Any], record: CallRecord, targets: Optional[Dict[str, Any]]) -> Any:
    """Make the call (and its backward pass, with ``targets``) into ``record``; its output."""
    if targets is not None:
        grads.clear_gradients(targets)
    try:
        output = call()
        record.output = flatten_output(output)
    except Exception as error:  # the exception is the behaviour
        _record_exception(record, error)
        return None
    if targets is None:
        return output
    try:
        record.backward, record.gradients = grads.backward(output, targets)
    except Exception as error:
        record.backward = grads.RAISED
        _record_exception(record, error, "in backward: ")
    return output


def _record_exception(record: CallRecord, error: Exception, where: str = "") -> None:
    record.exception = (_qualified_name(type(error)), _text(error))
    record.failure = where + describe_failure(error)


def _forget_once_state() -> None:
    warnings.onceregistry.clear()  # type: ignore[attr-defined]  # undocumented, not in typeshed
    for method in vars(logging.Logger).values():
        cache_clear = getattr(method, "cache_clear", None)
        if callable(cache_clear):
            cache_clear()


def _text(error: Exception) -> str:
    try:
        return str(error)
    except Exception:  # an exception whose message cannot be made is still its type
        return f"<unprintable {type(error).__qualname__}>"


def _qualified_name(kind: type) -> str:
    module = "" if kind.__module__ == "builtins" else f"{kind.__module__}."
    return module + kind.__qualname__


@contextlib.contextmanager
def _recorded_logs() -> Iterator[List[LogItem]]:
    """Yield a list that collects the log records reaching the root or a non-propagating logger."""
    items: List[LogItem] = []
    handler = _LogRecorder(items)
    loggers = [logging.root, *_non_propagating_loggers()]
    for logger in loggers:
        logger.addHandler(handler)
    try:
        yield items
    finally:
        for logger in loggers:
            logger.removeHandler(handler)


def _non_propagating_loggers() -> Iterator[logging.Logger]:
    for name, logger in list(logging.root.manager.loggerDict.items()):
        is_torch = name == "torch" or name.startswith("torch.")
        if isinstance(logger, logging.Logger) and not logger.propagate and not is_torch:
            yield logger


class _LogRecorder(logging.Handler):
    def __init__(self, items: List[LogItem]) -> None:
        super().__init__(logging.NOTSET)
        self._items = items

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception:  # arguments that do not fit the format: the program's handlers fail too
            message = f"{record.msg!r} % {record.args!r}"
        self._items.append((record.name, record.levelname, message))


# --- comparison ---------------------------------------------------------------------------------


@dataclass
class PartComparison:
    """One part of two recordings: whether it is equal, the first difference, and why a
    difference is documented (not a failure) when it is."""

    equal: bool
    difference: Optional[str] = None
    documented: Optional[str] = None

    @property
    def ok(self) -> bool:
        return self.equal or self.documented is not None


@dataclass
class BehaviourComparison:
    """``actual`` against ``expected`` (labels such as "eager original", "compiled fixed")."""

    expected: str
    actual: str
    parts: Dict[str, PartComparison]

    @property
    def key(self) -> str:
        """``eager_original_vs_compiled_fixed``: the comparison's key in the JSON."""
        return f"{self.expected} vs {self.actual}".replace(",", "").replace(" ", "_")

    @property
    def equal(self) -> bool:
        """Every part equal or differing only as documented."""
        return all(part.ok for part in self.parts.values())

    def failing(self) -> List[str]:
        return [name for name, part in self.parts.items() if not part.ok]

    def documented(self) -> List[str]:
        return [name for name, part in self.parts.items() if part.documented]

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> BehaviourComparison:
        parts = {name: PartComparison(**part) for name, part in data["parts"].items()}
        return cls(data["expected"], data["actual"], parts)


def compare_behaviour(
    expected: Sequence[CallRecord],
    actual: Sequence[CallRecord],
    labels: Tuple[str, str],
    trap_documented: bool = False,
    gradients: bool = False,
) -> BehaviourComparison:
    """Compare two recordings of the same calls, part by part. ``labels`` name the two sides;
    ``trap_documented``: ``actual`` is compiled fixed code, whose [Trap] guards raise
    ``RuntimeError`` (the documented difference); ``gradients``: the calls ran backward passes
    (``--grad``), compare their gradients too."""
    sides = _Sides(*labels)
    parts = {
        "values": _compare_values(expected, actual),
        "state": _compare_state(expected, actual),
        "exceptions": _compare_exceptions(expected, actual, sides, trap_documented),
    }
    for stream in ("stdout", "stderr"):
        parts[stream] = _compare_items(
            stream, _lines(expected, stream), _lines(actual, stream), sides, _quoted, " lines"
        )
    parts["logs"] = _compare_items(
        "log records", _items(expected, "logs"), _items(actual, "logs"), sides, _show_log
    )
    parts["warnings"] = _compare_items(
        "warnings", _items(expected, "warnings"), _items(actual, "warnings"), sides, _show_warning
    )
    if gradients:
        parts["gradients"] = compare_gradients(expected, actual, labels)
    return BehaviourComparison(sides.expected, sides.actual, parts)


class _Sides(NamedTuple):
    expected: str
    actual: str


_Item = Tuple[int, Any]
"""(call number from 1, a line written, a log record or a warning)"""


def _lines(records: Sequence[CallRecord], stream: str) -> List[_Item]:
    return [
        (call, line)
        for call, record in enumerate(records, 1)
        for line in getattr(record, stream).splitlines(keepends=True)
    ]


def _items(records: Sequence[CallRecord], part: str) -> List[_Item]:
    return [
        (call, tuple(item))
        for call, record in enumerate(records, 1)
        for item in getattr(record, part)
    ]


def _show_log(item: LogItem) -> str:
    name, level, message = item
    return f"{level} {name}: {_quoted(message)}"


def _show_warning(item: WarningItem) -> str:
    category, message = item
    return f"{category}: {_quoted(message)}"


def _compare_values(
    expected: Sequence[CallRecord], actual: Sequence[CallRecord]
) -> PartComparison:
    """The outputs of the calls that returned on both sides (the others differ in exceptions)."""
    return _compare_flattened(expected, actual, "output", "values: call {call}")


def _compare_state(
    expected: Sequence[CallRecord], actual: Sequence[CallRecord]
) -> PartComparison:
    """The tensors that outlive each call (a recording without them compares equal)."""
    return _compare_flattened(expected, actual, "state", "state after call {call}")


def _compare_flattened(
    expected: Sequence[CallRecord], actual: Sequence[CallRecord], field: str, where: str
) -> PartComparison:
    """Compare the flattened ``field`` of each call recorded on both sides; the first
    difference is told after ``where`` (a format of ``call``, numbered from 1)."""
    for call, (want, got) in enumerate(zip(expected, actual), 1):
        wanted, found = getattr(want, field), getattr(got, field)
        if wanted is None or found is None:
            continue
        compared = compare_outputs(wanted, found)
        if not compared.equal:
            return PartComparison(False, f"{where.format(call=call)}: {compared.differences[0]}")
    return PartComparison(True)


def compare_gradients(
    expected: Sequence[CallRecord], actual: Sequence[CallRecord], labels: Tuple[str, str]
) -> PartComparison:
    """The gradients of the calls that returned on both sides (the others differ in exceptions):
    whether each ran a backward pass, then each target's gradient, bitwise. A difference only in
    the sign of zero is documented (``gradients.ZERO_SIGNS``)."""
    differences: List[Tuple[str, bool]] = []
    for call, (want, got) in enumerate(zip(expected, actual), 1):
        if want.exception or got.exception:
            continue
        if want.backward != got.backward:
            differences.append((
                f"call {call}: {labels[0]} {_backward(want)}, {labels[1]} {_backward(got)}", False
            ))
        elif want.gradients is not None and got.gradients is not None:
            found = grads.gradient_differences(want.gradients, got.gradients, labels)
            differences += [(f"call {call}: {text}", zeros) for text, zeros in found]
    if not differences:
        return PartComparison(True)
    more = f" (and {len(differences) - 1} more)" if len(differences) > 1 else ""
    documented = all(zeros for _, zeros in differences)
    return PartComparison(
        False, f"gradients: {differences[0][0]}{more}", grads.ZERO_SIGNS if documented else None
    )


def _backward(record: CallRecord) -> str:
    return "ran backward" if record.backward == grads.DONE else f"ran none ({record.backward})"


def _compare_exceptions(
    expected: Sequence[CallRecord], actual: Sequence[CallRecord], sides: _Sides, trap: bool
) -> PartComparison:
    differences = [
        (call, want, got)
        for call, (want, got) in enumerate(zip(expected, actual), 1)
        if _raised(want) != _raised(got)
    ]
    if not differences:
        return PartComparison(True)
    call, want, got = differences[0]
    first = f"exceptions: call {call}: {sides.expected} {_outcome(want)}, "
    first += f"{sides.actual} {_outcome(got)}"
    documented = trap and all(_is_trap_difference(want, got) for _, want, got in differences)
    return PartComparison(False, first, TRAP_DIFFERENCE if documented else None)


def _raised(record: CallRecord) -> Optional[Tuple[str, str, bool]]:
    """(type, message, raised in backward) or None."""
    if record.exception is None:
        return None
    return (*record.exception, record.backward == grads.RAISED)


def _outcome(record: CallRecord) -> str:
    raised = _raised(record)
    if raised is None:
        return "returned"
    kind, message, in_backward = raised
    return f"raised {kind}{' in backward' if in_backward else ''}: {_quoted(message)}"


def _is_trap_difference(original: CallRecord, compiled: CallRecord) -> bool:
    """The original raised ``E(message)``, the compiled fixed code ``RuntimeError(message)``
    (both in the forward call)."""
    want, got = _raised(original), _raised(compiled)
    return (
        want is not None
        and got is not None
        and want[0] != _TRAP_ERROR
        and got == (_TRAP_ERROR, want[1], False)
        and not want[2]
    )


def _compare_items(
    noun: str,
    expected: List[_Item],
    actual: List[_Item],
    sides: _Sides,
    show: Callable[[Any], str],
    unit: str = "",
) -> PartComparison:
    """Ordered items of all calls: the counts and the first item missing, extra or different."""
    if expected == actual:
        return PartComparison(True)
    matcher = difflib.SequenceMatcher(a=expected, b=actual, autojunk=False)
    tag, i, _, j, _ = next(code for code in matcher.get_opcodes() if code[0] != "equal")

    def shown(item: _Item) -> str:
        return f"{show(item[1])} (call {item[0]})"

    if tag == "delete":
        first = f"first missing {shown(expected[i])}"
    elif tag == "insert":
        first = f"first extra {shown(actual[j])}"
    else:
        first = (
            f"first different: {shown(expected[i])} in the {sides.expected}, "
            f"{shown(actual[j])} in the {sides.actual}"
        )
    counts = f"{sides.expected} has {len(expected)}{unit}, {sides.actual} {len(actual)}"
    return PartComparison(False, f"{noun}: {counts}: {first}")


def _quoted(text: str) -> str:
    """``repr(text)``, cut after ``_SHOWN_CHARACTERS`` characters."""
    if len(text) <= _SHOWN_CHARACTERS:
        return repr(text)
    return repr(text[:_SHOWN_CHARACTERS]) + "..."
