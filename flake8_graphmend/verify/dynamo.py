"""Probe what Dynamo does with a callable: graphs, graph-break sites and their GB ids.

``probe(fn, *args)`` compiles ``fn`` with a counting backend (each FX graph is counted and then
run eagerly through ``gm.forward``, so the output is exactly what the captured graphs compute)
and calls it once after ``torch._dynamo.reset()``.

Break sites are read from Dynamo's ``graph_breaks`` log, the channel behind
``TORCH_LOGS=graph_breaks``, which Dynamo writes for every break it takes. That catches what the
other counters miss on torch 2.13: a break before the first tensor op (graphs stays 1 and
``explain`` reports 0 breaks) and data-dependent branching (GB0170, counted under
``counters["unimplemented"]`` rather than ``counters["graph_break"]``).

``CompileReport.breaks`` is the number of break events: one per logged break. It can exceed
``graphs - 1`` (a break inside an inlined call may be logged for the caller's frame and again
for the callee's) and it is non-zero with ``graphs == 1`` when the break precedes every tensor op.

``count_backward_graphs`` counts, in a compile of its own, the backward graphs that AOTAutograd
makes for the forward graphs. Not in the probe: AOTAutograd's graphs run decomposed ATen ops,
which change the last bits of gradients (T5: 19 of its 47 weight gradients, by up to 1.8e-5)
where the counting backend's graphs compute exactly what eager code does.

torch is imported inside the functions only, so importing this module stays cheap.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import json
import logging
import os
import re
import sysconfig
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from ..analysis.regions import GRAPHMEND_HELPER_PREFIX

_GRAPH_BREAK_ARTIFACT_SUFFIX = ".__graph_breaks"
_REASON_PREFIX = "Graph Break Reason: "
_EXPLANATION_PREFIX = "Explanation:"
_STACK_MARKERS = ("User code traceback:", "The graph break occurred in the following user code:")
_FRAME_LINE = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in ', re.M)
_BREAK_LOCATION = re.compile(r"in user code at (?P<file>.+):(?P<line>\d+)$", re.M)


@dataclass(frozen=True)
class BreakSite:
    """One graph break: the innermost user frame, the break's registry id, type and reason."""

    filename: str
    lineno: int
    gb_id: Optional[str]
    gb_type: str
    reason: str

    def __str__(self) -> str:
        gb_id = self.gb_id or "(no GB id)"
        return f"{self.filename}:{self.lineno} {gb_id} {self.gb_type}: {self.reason}"


@dataclass
class CompileReport:
    """What one compiled call did: FX graphs handed to the backend, break events, the output,
    and the compiled callable (counting backend, which runs graphs eagerly) for more calls."""

    graphs: int
    break_sites: List[BreakSite] = field(default_factory=list)
    output: Any = None
    compiled: Optional[Callable[..., Any]] = None
    #: The calls of the program's own code in those graphs (``compiled_calls``).
    compiled_calls: int = 0

    @property
    def breaks(self) -> int:
        """Number of break events Dynamo logged (see the module docstring)."""
        return len(self.break_sites)

    def site_counts(self) -> Counter[BreakSite]:
        """Distinct break sites with their number of events, in order of first occurrence."""
        return Counter(self.break_sites)


def probe(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> CompileReport:
    """Reset Dynamo, compile ``fn`` with the counting backend, call it once and report."""
    report = CompileReport(graphs=0)
    report.output = probe_into(report, fn, *args, **kwargs)
    return report


def probe_into(report: CompileReport, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``probe``'s work, filling ``report`` (but not its output) as it goes, so that the graphs
    and break sites before an exception are known when the call raises. Returns the output."""
    import torch

    torch._dynamo.reset()
    graphs: List[Any] = []

    def counting_backend(graph_module: Any, example_inputs: Any) -> Callable[..., Any]:
        graphs.append(graph_module)
        return graph_module.forward

    report.compiled = torch.compile(fn, backend=counting_backend)
    try:
        with recorded_graph_breaks() as sites:
            report.break_sites = sites  # filled as Dynamo logs each break
            return report.compiled(*args, **kwargs)
    finally:
        report.graphs = len(graphs)  # later calls (recompiles) add graphs: not counted
        report.compiled_calls = sum(compiled_calls(graph) for graph in graphs)


def compiled_calls(graph_module: Any) -> int:
    """How many calls of torch functions, tensor methods and modules ``graph_module`` makes
    for the program's own code: not those of the fixers' helpers (their ops, and what runs in
    their code). A fix adds calls to the graphs (both sides of a selection, a check) or
    keeps them; fewer mean that code which compiled before now runs eagerly (a frame that
    Dynamo skips)."""
    return sum(
        1
        for node in graph_module.graph.nodes
        if node.op in ("call_function", "call_method", "call_module")
        and "graphmend" not in str(node.target)
        and not any(
            _in_helper(frame.group("file"), int(frame.group("line")))
            for frame in _FRAME_LINE.finditer(node.stack_trace or "")
        )
    )


def _in_helper(filename: str, line: int) -> bool:
    """Whether ``line`` of ``filename`` is in a helper the fixers emit (a module-level
    ``_graphmend_`` function, the functions defined in it included)."""
    return any(first <= line <= last for first, last in _helper_spans(filename))


@functools.lru_cache(maxsize=None)
def _helper_spans(filename: str) -> Tuple[Tuple[int, int], ...]:
    try:
        tree = ast.parse(Path(filename).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return ()
    return tuple(
        (node.lineno, node.end_lineno or node.lineno)
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.name.startswith(GRAPHMEND_HELPER_PREFIX)
    )


def count_backward_graphs(
    fn: Callable[..., Any], backward: Callable[[Any], Any], *args: Any, **kwargs: Any
) -> int:
    """Reset Dynamo, compile ``fn`` with AOTAutograd and counting compilers that run each graph
    unchanged, call it once and ``backward(output)``; the number of backward graphs compiled
    (AOTAutograd compiles them at the first backward pass). Resets Dynamo again."""
    import torch
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch.aot_autograd import make_boxed_func

    backward_graphs: List[Any] = []

    def forward_compiler(graph_module: Any, example_inputs: Any) -> Callable[..., Any]:
        return make_boxed_func(graph_module.forward)

    def backward_compiler(graph_module: Any, example_inputs: Any) -> Callable[..., Any]:
        backward_graphs.append(graph_module)
        return make_boxed_func(graph_module.forward)

    torch._dynamo.reset()
    try:
        backend = aot_autograd(fw_compiler=forward_compiler, bw_compiler=backward_compiler)
        backward(torch.compile(fn, backend=backend)(*args, **kwargs))
    finally:
        torch._dynamo.reset()
    return len(backward_graphs)


def fullgraph_error(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Optional[str]:
    """None when ``torch.compile(fn, fullgraph=True, backend="eager")`` runs, else why not.

    Note that on torch 2.13 ``fullgraph=True`` turns on scalar and dynamic-shape capture, so
    ``.item()`` and ``nonzero`` pass here although they break under the default config.
    """
    import torch

    torch._dynamo.reset()
    try:
        torch.compile(fn, fullgraph=True, backend="eager")(*args, **kwargs)
    except Exception as error:  # any failure is the answer, whatever its type
        return summarize_exception(error)
    finally:
        torch._dynamo.reset()
    return None


def gb_id_for(gb_type: str) -> Optional[str]:
    """The PyTorch graph-break id (``GB0170``) of a break type, if this torch has a registry."""
    return _gb_ids_by_type().get(gb_type)


def summarize_exception(error: BaseException) -> str:
    """``Type: first line of the message``, for one-line reports."""
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__


@functools.lru_cache(maxsize=1)
def _gb_ids_by_type() -> Dict[str, str]:
    import torch._dynamo

    registry_path = Path(torch._dynamo.__file__).with_name("graph_break_registry.json")
    if not registry_path.is_file():
        return {}
    registry = json.loads(registry_path.read_text(encoding="utf-8"))
    ids: Dict[str, str] = {}
    for gb_id in sorted(registry):
        for entry in registry[gb_id]:
            ids.setdefault(entry.get("Gb_type", ""), gb_id)
    return ids


@contextlib.contextmanager
def recorded_graph_breaks() -> Iterator[List[BreakSite]]:
    """Yield a list that collects a ``BreakSite`` for every break Dynamo logs meanwhile."""
    import torch._dynamo  # noqa: F401  (creates the graph_breaks artifact loggers)

    sites: List[BreakSite] = []
    handler = _BreakLogHandler(sites)
    saved = [(logger, logger.level, logger.propagate) for logger in _graph_break_loggers()]
    for logger, _, _ in saved:
        logger.setLevel(logging.DEBUG)
        logger.propagate = False
        logger.addHandler(handler)
    try:
        yield sites
    finally:
        for logger, level, propagate in saved:
            logger.removeHandler(handler)
            logger.setLevel(level)
            logger.propagate = propagate


def _graph_break_loggers() -> Iterator[logging.Logger]:
    for name in list(logging.root.manager.loggerDict):
        if name.endswith(_GRAPH_BREAK_ARTIFACT_SUFFIX):
            yield logging.getLogger(name)


class _BreakLogHandler(logging.Handler):
    def __init__(self, sites: List[BreakSite]) -> None:
        super().__init__(logging.DEBUG)
        self._sites = sites
        #: For a line in a helper the fixers emit, the line whose call of it broke there.
        self._callers: Dict[Tuple[str, int], Tuple[str, int]] = {}

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        error = record.exc_info[1] if record.exc_info else None
        site = parse_break_record(message, str(error) if error else "")
        location = _BREAK_LOCATION.search(message)
        at = (location["file"], int(location["line"])) if location else None
        if at is not None and _in_helper(*at):
            # Dynamo logs a break again without its stack: give it the caller it had
            if (site.filename, site.lineno) != at:
                self._callers[at] = (site.filename, site.lineno)
            elif at in self._callers:
                filename, lineno = self._callers[at]
                site = replace(site, filename=filename, lineno=lineno)
        self._sites.append(site)


def parse_break_record(message: str, exception_text: str = "") -> BreakSite:
    """Turn one ``graph_breaks`` log message (plus its exception text, if any) into a site."""
    filename, lineno = _innermost_user_frame(message)
    gb_type, reason = _type_and_reason(f"{message}\n{exception_text}")
    return BreakSite(filename, lineno, gb_id_for(gb_type), gb_type, reason)


def _type_and_reason(text: str) -> Tuple[str, str]:
    """The break type is the line above the first ``Explanation:``; the reason follows it."""
    lines = [line.removeprefix(_REASON_PREFIX).strip() for line in text.splitlines()]
    for index, line in enumerate(lines):
        if line.startswith(_EXPLANATION_PREFIX) and index > 0:
            return lines[index - 1], line.removeprefix(_EXPLANATION_PREFIX).strip()
    headline = next((line for line in lines if line and not line.startswith("Graph break")), "")
    return headline, headline


def _innermost_user_frame(message: str) -> Tuple[str, int]:
    """The innermost frame of the logged user stack that is neither torch nor the stdlib, nor
    a helper the fixers emit (a break there is the break of the line that calls it: a break a
    fix keeps, ``_graphmend_eager_frame()``)."""
    stack_text = ""
    for marker in _STACK_MARKERS:
        if marker in message:
            stack_text = message.split(marker, 1)[1]
    frames = [(m["file"], int(m["line"])) for m in _FRAME_LINE.finditer(stack_text)]
    user_frames = [
        frame for frame in frames if not is_library_file(frame[0]) and not _in_helper(*frame)
    ]
    if user_frames:
        return user_frames[-1]
    if frames:
        return frames[-1]
    location = _BREAK_LOCATION.search(message)
    return (location["file"], int(location["line"])) if location else ("<unknown>", 0)


def is_library_file(filename: str) -> bool:
    """True for torch's own files and the standard library (site-packages is user code)."""
    path = os.path.realpath(filename)
    if _is_under(path, (_torch_root(),)):
        return True
    return _is_under(path, _stdlib_roots()) and not _is_under(path, _site_package_roots())


def _is_under(path: str, roots: Tuple[str, ...]) -> bool:
    return any(path.startswith(root + os.sep) for root in roots)


@functools.lru_cache(maxsize=1)
def _stdlib_roots() -> Tuple[str, ...]:
    paths = sysconfig.get_paths()
    return tuple({os.path.realpath(paths[key]) for key in ("stdlib", "platstdlib")})


@functools.lru_cache(maxsize=1)
def _site_package_roots() -> Tuple[str, ...]:
    paths = sysconfig.get_paths()
    return tuple({os.path.realpath(paths[key]) for key in ("purelib", "platlib")})


@functools.lru_cache(maxsize=1)
def _torch_root() -> str:
    import torch

    return os.path.realpath(os.path.dirname(torch.__file__))
