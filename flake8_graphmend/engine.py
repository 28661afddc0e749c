"""The detector: source in, GM findings out.

Shared by the flake8 plugin, the CLI and the codemods.
"""

from __future__ import annotations

import ast
import fnmatch
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Set, Tuple

from .analysis.arguments import argument_kinds
from .analysis.index import (
    MATCH_STATEMENTS, TRY_STATEMENTS, ModuleIndex, child_blocks, child_nodes,
)
from .analysis.regions import Region, RegionFinder
from .analysis.project import module_name
from .analysis.symbols import FunctionNode, ModuleSymbols, package_of
from .analysis.values import Kind, ValueAnalysis, class_tensor_attributes
from .planning.frames import keep_frames, module_calls
from .rules import (
    CALL_DETECTORS, STATEMENT_DETECTORS, SUBSCRIPT_DETECTORS, Finding, FunctionContext,
    control_flow,
)

SCOPES = ("compiled", "all")
#: Code of the finding that reports an internal error on a file (never raised to flake8).
INTERNAL_ERROR_CODE = "GM000"
_NOQA = re.compile(r"#\s*noqa(?::[\s]?(?P<codes>([A-Z]+[0-9]+(?:[,\s]+)?)+))?", re.IGNORECASE)


@dataclass(frozen=True)
class Options:
    """What counts as compiled code (see docs/usage.md)."""

    #: ``compiled``: entry points and what they call; ``all``: every function of a torch file.
    scope: str = "compiled"
    #: Extra entry points: ``func``, ``Class`` (its forward), ``Class.method`` or ``@decorator``
    #: (the inner functions of a decorator applied to compiled code in another file).
    entry_points: Tuple[str, ...] = ()
    #: Glob patterns of files treated as wholly compiled (shared library modules).
    compiled_modules: Tuple[str, ...] = ()
    #: Entry points of this file that compiled code in other files reaches, each with its
    #: caller (``(spec, "modeling_x.py: Model.forward")``; see ``analysis/project.py``).
    links: Tuple[Tuple[str, str], ...] = ()
    #: The file's dotted module name where its path does not tell it (a rewritten copy), for
    #: its relative imports; by default its folders up to the first without ``__init__.py``.
    module: str = ""

    def __post_init__(self) -> None:
        if self.scope not in SCOPES:
            raise ValueError(f"scope must be one of {', '.join(SCOPES)}, not {self.scope!r}")

    def whole_module(self, filename: str) -> bool:
        """Whether every function of ``filename`` counts: ``scope=all``, or a pattern of
        ``compiled_modules`` matches the path as given or made absolute."""
        if self.scope == "all":
            return True
        paths = {Path(filename).as_posix(), Path(filename).absolute().as_posix()}
        return any(
            fnmatch.fnmatch(path, pattern) or path.endswith(pattern.lstrip("*"))
            for pattern in self.compiled_modules
            for path in paths
        )

    def linked(self, links: Sequence[Tuple[str, str]]) -> "Options":
        """These options for one file, with the entry points other files' code reaches."""
        return replace(self, links=tuple(links))


def _decided(test: ast.expr, values: ValueAnalysis) -> Optional[bool]:
    """The value Dynamo gives ``test`` without looking at tensor data, if tracing-state probes
    decide it (``not torch.jit.is_scripting()``, ``not compiling and ...``), else None."""
    truth = values.dynamo_truth(test)
    if truth is None:
        return None
    for operand in values.evaluated_operands(test):
        if values.dynamo_truth(operand) is None and values.is_data_dependent(operand):
            return None  # a tensor operand is tested before the probe decides
    return truth


def _branches_traced(node: ast.If, values: ValueAnalysis) -> Tuple[bool, bool]:
    """Which of (body, orelse) Dynamo traces: only one when probes decide the test."""
    truth = values.dynamo_truth(node.test)
    return truth is not False, truth is not True


def _header_expressions(statement: ast.stmt) -> List[ast.AST]:
    """The expressions a statement evaluates itself (for compound statements: the header)."""
    if isinstance(statement, (ast.If, ast.While)):
        return [statement.test]
    if isinstance(statement, (ast.For, ast.AsyncFor)):
        return [statement.iter]
    if isinstance(statement, (ast.With, ast.AsyncWith)):
        return [item.context_expr for item in statement.items]
    if isinstance(statement, TRY_STATEMENTS):
        return [h.type for h in statement.handlers if h.type is not None]
    if isinstance(statement, MATCH_STATEMENTS):
        return [statement.subject]
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return []
    return [statement]


def _child_blocks(statement: ast.stmt, values: ValueAnalysis) -> Iterator[List[ast.stmt]]:
    """The blocks of ``statement`` that Dynamo traces (not nested definitions' bodies)."""
    if isinstance(statement, ast.If):
        body, orelse = _branches_traced(statement, values)
        if body:
            yield statement.body
        if orelse and statement.orelse:
            yield statement.orelse
    elif not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield from child_blocks(statement)


def _walk_expression(node: ast.AST, values: ValueAnalysis) -> Iterator[ast.AST]:
    """The nodes of an expression that Dynamo evaluates.

    Nested function or class definitions are not entered, nor the operands of ``and``/``or``
    and the branch of ``x if test else y`` that tracing-state probes rule out.
    """
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, ast.BoolOp):
            stack.extend(values.evaluated_operands(current))
            continue
        if isinstance(current, ast.IfExp):
            truth = values.dynamo_truth(current.test)
            if truth is not None:
                if _decided(current.test, values) is None:
                    yield current  # a tensor operand is tested first: still a break
                stack.extend(values.evaluated_operands(current.test))
                stack.append(current.body if truth else current.orelse)
                continue
        yield current
        if not isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            stack.extend(child_nodes(current))


def _check_block(block: List[ast.stmt], ctx: FunctionContext) -> Iterator[Finding]:
    values = ctx.values
    for statement in block:
        expressions: Sequence[ast.AST] = _header_expressions(statement)
        if isinstance(statement, ast.If):
            expressions = values.evaluated_operands(statement.test)
            if _decided(statement.test, values) is None:
                yield from control_flow.check_if(statement, block, ctx)
        elif isinstance(statement, ast.While):
            yield from control_flow.check_while(statement, ctx)
        elif isinstance(statement, ast.Assert):
            yield from control_flow.check_assert(statement, ctx)
        for statement_detector in STATEMENT_DETECTORS:
            yield from statement_detector(statement, ctx)
        for expression in expressions:
            for node in _walk_expression(expression, values):
                yield from _check_node(node, statement, block, ctx)
        for child in _child_blocks(statement, values):
            yield from _check_block(child, ctx)
        if isinstance(statement, ast.If) and _always_leaves(statement, values):
            return  # ``if is_torchdynamo_compiling(): return x``: the rest is never traced


def _check_node(
    node: ast.AST, statement: ast.stmt, block: List[ast.stmt], ctx: FunctionContext
) -> Iterator[Finding]:
    """The findings of the detectors of ``node``'s type, an expression node Dynamo evaluates."""
    if isinstance(node, ast.Call):
        for detector in CALL_DETECTORS:
            yield from detector(node, statement, ctx)
    elif isinstance(node, ast.Subscript):
        for subscript_detector in SUBSCRIPT_DETECTORS:
            yield from subscript_detector(node, ctx)
    elif isinstance(node, ast.IfExp):
        yield from control_flow.check_if_expression(node, statement, block, ctx)


def _always_leaves(statement: ast.If, values: ValueAnalysis) -> bool:
    """Whether Dynamo always takes a branch of ``statement`` that returns or raises."""
    truth = _decided(statement.test, values)
    if truth is None:
        return False
    taken = statement.body if truth else statement.orelse
    return bool(taken) and isinstance(taken[-1], (ast.Return, ast.Raise))


def analyze_tree(
    tree: ast.Module,
    lines: Sequence[str],
    filename: str = "<unknown>",
    options: Optional[Options] = None,
) -> List[Finding]:
    """Findings for a parsed module, sorted by position."""
    options = options or Options()
    source_mentions_torch = any("torch" in line for line in lines)
    if not source_mentions_torch:
        return []
    symbols = ModuleSymbols.collect(tree, _package(filename, options))
    index = ModuleIndex(tree)
    finder = RegionFinder.for_module(symbols, index, lines, filename, options)
    regions = finder.regions()
    if not finder.whole_module:
        symbols.traced = frozenset(f for f, region in regions.items() if region.compiled)
    self_tensors: Dict[Optional[ast.ClassDef], Set[str]] = {}
    #: The latest analysis of each function, with the argument kinds it was built with (the
    #: last round of ``argument_kinds`` builds the callers' final ones).
    built: Dict[FunctionNode, Tuple[Dict[str, Kind], ValueAnalysis]] = {}

    def analysis(function: FunctionNode, kinds: Dict[str, Kind]) -> ValueAnalysis:
        previous = built.get(function)
        if previous is not None and previous[0] == kinds:
            return previous[1]
        region = regions[function]
        owner = region.owner.node if region.owner else None
        if owner not in self_tensors:
            self_tensors[owner] = class_tensor_attributes(region.owner, symbols, index)
        values = ValueAnalysis(index.facts(function), symbols, self_tensors[owner], kinds)
        built[function] = (kinds, values)
        return values

    passed = argument_kinds(finder, regions, analysis)
    contexts: Dict[FunctionNode, FunctionContext] = {}
    for function, region in regions.items():
        values = analysis(function, passed.get(function, {}))
        ctx = contexts[function] = FunctionContext(
            region, symbols, index.facts(function), values, lines
        )
        list(_check_block(function.body, ctx))  # ctx.sites records each finding

    def callees(function: FunctionNode) -> Iterator[Tuple[ast.Call, FunctionNode]]:
        yield from ((call, callee) for call, callee, _ in finder.call_targets(function))
        yield from module_calls(contexts[function])

    findings = keep_frames(contexts, callees, finder.disabled)
    unique = {(f.line, f.col, f.code): f for f in findings}
    return sorted(unique.values(), key=lambda f: (f.line, f.col, f.code))


def _package(filename: str, options: Options) -> str:
    """The package of the file ``filename`` (``options.module``'s, if given): where its
    relative imports are resolved from; "" where not known."""
    if options.module:
        return package_of(options.module, filename)
    if filename.startswith("<") or not Path(filename).is_file():
        return ""
    return package_of(module_name(Path(filename)), filename)


def analyze_source(
    source: str, filename: str = "<unknown>", options: Optional[Options] = None
) -> List[Finding]:
    """Parse and analyze. Raises SyntaxError (and ValueError for NUL bytes) on unparsable input."""
    tree = ast.parse(source, filename=filename)
    return analyze_tree(tree, source.splitlines(), filename, options)


def analyze_file(
    path: Path, scope: Optional[str] = None, options: Optional[Options] = None
) -> List[Finding]:
    """Findings of one file; ``scope`` overrides the options' scope."""
    options = options or Options()
    if scope is not None:
        options = replace(options, scope=scope)
    source = Path(path).read_bytes().decode("utf-8-sig")
    return analyze_source(source, str(path), options)


def suppressed(finding: Finding, lines: Sequence[str]) -> bool:
    """Whether a ``# noqa`` comment on the finding's lines covers its code (flake8's rules)."""
    for number in range(finding.line, min(finding.end_line, len(lines)) + 1):
        match = _NOQA.search(lines[number - 1])
        if match:
            codes = match.group("codes")
            if not codes:
                return True
            listed = [code for code in re.split(r"[,\s]+", codes.upper()) if code]
            if any(finding.code.startswith(code) for code in listed):
                return True
    return False


def internal_error(exc: BaseException) -> Tuple[int, int, str]:
    """The (line, col, text) of the finding that reports an analysis crash on a file."""
    reason = f"{type(exc).__name__}: {exc}"
    return 1, 0, f"{INTERNAL_ERROR_CODE} graphmend internal error, file not analyzed: {reason}"


__all__ = [
    "Finding", "Options", "Region", "analyze_file", "analyze_source", "analyze_tree", "suppressed"
]
