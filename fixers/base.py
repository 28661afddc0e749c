"""The one codemod behind every fixer: findings in, each planned site rewritten, one pass.

The engine analyses the module once. The command visits it once and hands each site whose
finding carries a plan to the rewrite registered for that plan's type (``@rewrites_call``,
``@rewrites_statement`` in ``trap.py``, ``where.py``, ``defer.py``); a command fixes the codes the
registry assigns to it (``FixAll``: all of them). The rewrites apply the plan; they do not
decide legality again (``flake8_graphmend/planning/`` did). They share the services here:
node lookup, emitted helpers, fresh names, and code emitted in the file's own style.
"""

from __future__ import annotations

import argparse
import ast
import functools
import io
import os
import re
import tokenize
from pathlib import Path
from typing import (
    Any,
    Callable,
    ClassVar,
    Dict,
    FrozenSet,
    List,
    Mapping,
    Optional,
    Sequence,
    Set,
    Tuple,
    Type,
    TypeVar,
)

import libcst as cst
from libcst.codemod import CodemodContext, SkipFile, VisitorBasedCodemodCommand
from libcst.metadata import CodeRange, CodePosition, MetadataWrapper, PositionProvider

from flake8_graphmend.analysis.project import Links, project_links
from flake8_graphmend.engine import SCOPES, Finding, Options, analyze_tree, suppressed
from flake8_graphmend.files import TOO_DEEP_TO_ANALYSE, parse_failure
from flake8_graphmend.planning import Plan
from flake8_graphmend.registry import CODES_BY_FIXER

from .helpers import EAGER_FRAME, ITEM, HelperNameTaken, HelperSet

#: Emitted calls longer than the file's longest line, within these bounds, are split one
#: argument per line (so the fix follows the file's own line length).
LINE_LENGTH_BOUNDS = (79, 120)

#: The statements of an ``if`` branch, each with its line (None in a one-line suite).
Branch = List[Tuple[cst.BaseSmallStatement, Optional[cst.SimpleStatementLine]]]

#: ``rewrite(command, call, plan) -> replacement`` for a call site.
CallRewrite = Callable[["GraphMendCommand", cst.Call, Any], cst.BaseExpression]
#: ``rewrite(command, original, updated, plan, following) -> (statements, consumed)`` for an
#: ``if`` (or a line holding one ``assert``): the statements that replace it, and whether they
#: replace ``following`` too.
StatementRewrite = Callable[
    ["GraphMendCommand", Any, Any, Any, Optional[cst.BaseStatement]],
    Tuple[List[cst.BaseStatement], bool],
]
_CALL_REWRITES: Dict[Type[Plan], CallRewrite] = {}
_STATEMENT_REWRITES: Dict[Type[Plan], StatementRewrite] = {}
RewriteT = TypeVar("RewriteT", bound=Callable[..., Any])


def rewrites_call(*plan_types: Type[Plan]) -> Callable[[RewriteT], RewriteT]:
    """Register the rewrite of call sites planned as ``plan_types``."""

    def register(rewrite: RewriteT) -> RewriteT:
        _CALL_REWRITES.update(dict.fromkeys(plan_types, rewrite))
        return rewrite

    return register


def rewrites_statement(*plan_types: Type[Plan]) -> Callable[[RewriteT], RewriteT]:
    """Register the rewrite of statements (``if``, ``assert``) planned as ``plan_types``."""

    def register(rewrite: RewriteT) -> RewriteT:
        _STATEMENT_REWRITES.update(dict.fromkeys(plan_types, rewrite))
        return rewrite

    return register


def rewrite_statement(
    command: "GraphMendCommand",
    original: cst.BaseStatement,
    updated: cst.BaseStatement,
    plan: Plan,
    following: Optional[cst.BaseStatement],
) -> Tuple[List[cst.BaseStatement], bool]:
    """The statements that the rewrite registered for ``plan``'s type puts in place of
    ``updated`` (``original`` before its sites were rewritten), and whether they replace
    ``following`` too."""
    return _STATEMENT_REWRITES[type(plan)](command, original, updated, plan, following)


def decline_message(finding: Finding, reason: str) -> str:
    """The warning for a site that is not fixed: ``line:col: CODE not fixed: reason`` (the code
    with the condition its break needs, if any: ``GM201 (only when `self.training`)``)."""
    return f"{finding.line}:{finding.col + 1}: {finding.label} not fixed: {reason}"


class SourceNotAnalysed(SkipFile):
    """The file cannot be analysed (Python's parser rejects it); no fixer can rewrite it."""


class Decline(Exception):
    """The rewrite of one site is abandoned; the message says why (it becomes a codemod warning)."""


class PlanMismatch(Decline):
    """The code at a site is not what its plan describes (a bug: the site is left as it was)."""

    def __init__(self, what: str) -> None:
        super().__init__(f"internal error, please report: {what} is not in the planned form")


NodeT = TypeVar("NodeT", bound=cst.CSTNode)


def expect(node: object, kind: Type[NodeT], what: str) -> NodeT:
    """``node`` as a ``kind``, as its plan says it is (``PlanMismatch`` otherwise)."""
    if not isinstance(node, kind):
        raise PlanMismatch(what)
    return node


def _positions(
    module: cst.Module, statement: cst.BaseStatement, first_line: int
) -> Dict[cst.CSTNode, CodeRange]:
    """The positions in the file of the nodes of ``statement``, a top-level statement of
    ``module`` whose code starts on ``first_line``: measured on a module of that statement
    alone (sharing its nodes), then moved to where it is."""
    alone = module.with_changes(body=[statement], header=[], footer=[])
    positions = MetadataWrapper(alone, unsafe_skip_copy=True).resolve(PositionProvider)
    offset = first_line - 1 - len(getattr(statement, "leading_lines", ()))
    return {
        node: CodeRange(
            CodePosition(span.start.line + offset, span.start.column),
            CodePosition(span.end.line + offset, span.end.column),
        )
        for node, span in positions.items()
    }


@functools.lru_cache(maxsize=4)
def _run_links(files: Tuple[str, ...], options: Options) -> Links:
    """The links of one codemod run, found once per process (from the files as they were
    before the run rewrote any of them)."""
    return project_links([Path(name) for name in files], options)


class GraphMendCommand(VisitorBasedCodemodCommand):
    """Rewrites the sites whose findings (codes ``CODES``) carry a fix plan, in one pass.

    ``CODES`` are the registry's codes for the subclass's name (``rule.fixer``). Declined
    findings, and sites whose rewrite is abandoned, are reported with ``warn``. Suppressed
    findings (``# noqa``) are left alone.
    """

    CODES: ClassVar[FrozenSet[str]] = frozenset()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "CODES" not in cls.__dict__:
            cls.CODES = frozenset(CODES_BY_FIXER.get(cls.__name__, ()))

    def __init__(
        self,
        context: CodemodContext,
        scope: str = "compiled",
        entry_points: Sequence[str] = (),
        compiled_modules: Sequence[str] = (),
        options: Optional[Options] = None,
        codes: Optional[Sequence[str]] = None,
        helpers_module: Optional[str] = None,
    ) -> None:
        super().__init__(context)
        self.options = options or Options(
            scope, tuple(entry_points or ()), tuple(compiled_modules or ())
        )
        #: The module the fixed helpers are imported from (None: written into each file).
        self.helpers_module = helpers_module or None
        #: The codes fixed in this run: ``CODES``, narrowed by ``codes`` when given.
        self.codes = self.CODES if codes is None else self.CODES & frozenset(codes)
        self.fixed_count = 0
        self._lines: List[str] = []
        self._line_length = LINE_LENGTH_BOUNDS[0]
        self._targets: Dict[Tuple[int, int], Finding] = {}
        self._helpers: Optional[HelperSet] = None
        self._module: Optional[cst.Module] = None
        self._tree = ast.Module(body=[], type_ignores=[])
        #: Positions in the file of the nodes of the statement being visited.
        self._positions: Dict[cst.CSTNode, CodeRange] = {}
        #: Functions and classes whose bodies the pass does not enter.
        self._skipped: Set[int] = set()
        #: Statements to rewrite (``if``, a line of one ``assert``), by the identity of their
        #: updated node.
        self._pending: Dict[int, Tuple[cst.BaseStatement, Finding]] = {}
        #: Names used in each enclosing function (innermost last), for fresh temporaries.
        self._function_names: List[Set[str]] = []
        #: Where the fixes keep a break (``FrameGuard``), and the helper that keeps it.
        self._frame_guards: Set[Tuple[int, int]] = set()
        self._eager_frame = EAGER_FRAME

    @staticmethod
    def add_args(arg_parser: argparse.ArgumentParser) -> None:
        arg_parser.add_argument(
            "--scope",
            choices=SCOPES,
            default="compiled",
            help="which functions count as compiled code",
        )
        arg_parser.add_argument(
            "--entry-point",
            dest="entry_points",
            action="append",
            default=[],
            help="an extra compiled entry point: func, Class or Class.method (repeatable)",
        )
        arg_parser.add_argument(
            "--compiled-module",
            dest="compiled_modules",
            action="append",
            default=[],
            help="glob of files treated as wholly compiled (repeatable)",
        )
        arg_parser.add_argument(
            "--helpers-module",
            default=None,
            metavar="MODULE",
            help=(
                "import the fixed helpers from MODULE (mypkg._graphmend) instead of writing them "
                "into each file; write MODULE with `graphmend helpers --write PATH`"
            ),
        )

    # ------------------------------------------------------------------ driving
    @property
    def module(self) -> cst.Module:
        """The module being transformed."""
        assert self._module is not None, "the module exists only while it is transformed"
        return self._module

    def transform_module(self, tree: cst.Module) -> cst.Module:
        """Analyse the source once, then rewrite the top-level statements that hold sites.

        Positions are computed for those statements only, and only they are visited: most of
        a large file is neither copied, measured nor walked (libcst's ``MetadataWrapper`` would
        copy and render the whole module).
        """
        self._select(tree.code)
        self._module = tree
        try:
            return self.transform_module_impl(tree)
        finally:
            self._module = None

    def _file_options(self, filename: str) -> Options:
        """The options, with what compiled code of the other files of the run reaches here.

        libcst's command line hands every transform the run's files through its repository
        manager (``repo_root`` in ``.libcst.codemod.yaml``; libcst keeps the list in the
        private ``_paths``): without it, or when links were given, the options are used as
        they are.
        """
        files = getattr(self.context.metadata_manager, "_paths", None)
        if self.options.links or not files or filename == "<unknown>":
            return self.options
        links = _run_links(tuple(str(name) for name in files), self.options)
        return self.options.linked(links.get(os.path.realpath(filename), ()))

    def _select(self, source: str) -> None:
        filename = self.context.filename or "<unknown>"
        try:
            self._tree = ast.parse(source, filename=filename)
        except (SyntaxError, ValueError, RecursionError) as error:
            # libcst parses more than this Python's ast does (newer syntax, deeper nesting)
            raise SourceNotAnalysed(f"not analysed: {parse_failure(error)}") from None
        self._lines = source.splitlines()
        options = self._file_options(filename)
        try:
            findings = analyze_tree(self._tree, self._lines, filename, options)
        except RecursionError:
            raise SourceNotAnalysed(f"not analysed: {TOO_DEEP_TO_ANALYSE}") from None
        longest = max((len(line) for line in self._lines), default=0)
        self._line_length = min(LINE_LENGTH_BOUNDS[1], max(LINE_LENGTH_BOUNDS[0], longest))
        self._targets = {}
        declines = []
        for finding in findings:
            if finding.code not in self.codes or suppressed(finding, self._lines):
                continue
            if finding.plan is not None:
                self._targets[(finding.line, finding.col)] = finding
            elif finding.decline:
                declines.append(finding)
        # not said of a site that a fix of this run rewrites along with its own (a print in an
        # `if` that [Defer] takes as a whole, the `.item()` of a guard [Trap] fixes): it is fixed
        covered = {site for t in self._targets.values() if t.plan for site in t.plan.covers()}
        for finding in declines:
            if (finding.line, finding.col) not in covered:
                self.declined(finding, finding.decline or "")
        if not self._targets:
            raise SkipFile("no fixable finding")

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        self._helpers = HelperSet(tree, self._tree, self.helpers_module)
        self.fixed_count = 0
        self._skipped, self._pending, self._function_names = set(), {}, []
        self._frame_guards = self._guards_kept()
        body = list(tree.body)
        changed = []
        for index, first_line in self._statements_with_sites(tree):
            self._positions = _positions(tree, body[index], first_line)
            updated = body[index].visit(self)
            # no leave_ method removes or flattens a statement: one statement comes back
            assert isinstance(updated, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
            if updated is not body[index]:
                body[index] = updated
                changed.append(updated)
        for finding in self._targets.values():
            self.declined(finding, "the fixer found no statement of the expected form there")
        if not self.fixed_count:
            raise SkipFile("nothing was rewritten")
        for statement in changed:  # the rest of the module is unchanged text
            try:
                ast.parse(tree.code_for_node(statement).lstrip())
            except SyntaxError as error:  # a fixer bug: never write code that does not parse
                raise RuntimeError(
                    f"graphmend produced code that does not parse ({error}); file left as it was"
                ) from None
        return self._helpers.insert(tree.with_changes(body=body))

    def _guards_kept(self) -> Set[Tuple[int, int]]:
        """Where the fixes of this run keep a break (``FrameGuard``); the fixes that need one
        are declined when the helper's name is taken."""
        needing = [f for f in self._targets.values() if f.frame_guards]
        if not needing:
            return set()
        try:
            self._eager_frame = self.helper(EAGER_FRAME)
        except Decline as reason:
            for finding in needing:
                del self._targets[(finding.line, finding.col)]
                self.declined(finding, str(reason))
            return set()
        return {guard.position for finding in needing for guard in finding.frame_guards}

    def _statements_with_sites(self, tree: cst.Module) -> List[Tuple[int, int]]:
        """(index in ``tree.body``, first line) of the top-level statements holding a site.

        libcst's top-level statements and ast's match in order: a line of ``;``-separated
        small statements is one libcst statement and several ast ones.
        """
        statements = iter(self._tree.body)
        found = []
        for index, statement in enumerate(tree.body):
            count = len(statement.body) if isinstance(statement, cst.SimpleStatementLine) else 1
            nodes = [next(statements) for _ in range(count)]
            first = min(
                [nodes[0].lineno] + [d.lineno for d in getattr(nodes[0], "decorator_list", [])]
            )
            last = max(node.end_lineno or node.lineno for node in nodes)
            if any(first <= line <= last for line, _ in self._targets):
                found.append((index, first))
        return found

    def position(self, node: cst.CSTNode) -> CodeRange:
        """Where ``node`` (an original node of a statement being visited) is in the file."""
        return self._positions[node]

    def on_visit(self, node: cst.CSTNode) -> bool:
        """Skip functions and classes that hold no site."""
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            span = self.position(node)
            if not any(span.start.line <= line <= span.end.line for line, _ in self._targets):
                self._skipped.add(id(node))
                return False
        return super().on_visit(node)

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode) -> Any:
        if id(original_node) in self._skipped:
            return updated_node
        return super().on_leave(original_node, updated_node)

    def target(
        self, node: cst.CSTNode, rewrites: Mapping[Type[Plan], object], whole: bool = False
    ) -> Optional[Finding]:
        """The fixable finding at the start of ``node`` (an original node) whose plan
        ``rewrites`` rewrite, taken off the list; with ``whole``, only one that ends where
        ``node`` ends too (``x.sum().item()`` and the ``x.sum()`` in it start at one place)."""
        span = self.position(node)
        key = (span.start.line, span.start.column)
        finding = self._targets.get(key)
        if finding is None or type(finding.plan) not in rewrites:
            return None
        if whole and (finding.end_line, finding.end_col) != (span.end.line, span.end.column):
            return None
        return self._targets.pop(key)

    def declined(self, finding: Finding, reason: str) -> None:
        self.warn(decline_message(finding, reason))

    def _fixed(self, finding: Finding) -> None:
        """Count a rewritten site; say what its fix leaves as it was, if anything."""
        self.fixed_count += 1
        if finding.caveat:
            self.warn(
                f"{finding.line}:{finding.col + 1}: {finding.label} fixed, but {finding.caveat}"
            )

    # ------------------------------------------------------------------ the sites
    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        finding = self.target(original_node, _CALL_REWRITES, whole=True)
        if finding is None:
            return updated_node
        assert finding.plan is not None  # the targets are the findings with a plan (_select)
        try:
            replacement = _CALL_REWRITES[type(finding.plan)](self, updated_node, finding.plan)
        except Decline as reason:
            self.declined(finding, str(reason))
            return updated_node
        self._fixed(finding)
        return replacement

    def leave_If(self, original_node: cst.If, updated_node: cst.If) -> cst.If:
        finding = self.target(original_node, _STATEMENT_REWRITES)
        if finding is not None:
            self._pending[id(updated_node)] = (original_node, finding)
        return updated_node

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine:
        """An ``assert``, an assignment whose value compares an ``.item()`` (the finding is
        at the call), or a ``return`` or assignment whose value is ``a if c else b`` may be
        rewritten as a statement."""
        small = original_node.body[0] if len(original_node.body) == 1 else None
        value = getattr(small, "value", None)
        sites: List[cst.CSTNode] = []
        if isinstance(small, cst.Assert):
            sites = [small]
        elif isinstance(small, cst.Assign) and isinstance(value, cst.Comparison):
            sites = [value.left, *(c.comparator for c in value.comparisons)]
        elif isinstance(small, (cst.Return, cst.Assign, cst.AnnAssign)) and isinstance(
            value, cst.IfExp
        ):
            sites = [value]
        for site in sites:
            finding = self.target(site, _STATEMENT_REWRITES, whole=site is not small)
            if finding is not None:
                self._pending[id(updated_node)] = (original_node, finding)
                break
        return updated_node

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        """Replace the pending statements of the block (a rewrite may take the statement after
        an ``if`` along, a trailing ``return``)."""
        body = self._with_frame_guards(original_node.body, updated_node.body)
        if not any(id(statement) in self._pending for statement in body):
            guarded = len(body) > len(updated_node.body)
            return updated_node.with_changes(body=body) if guarded else updated_node
        new_body: List[cst.BaseStatement] = []
        index = 0
        while index < len(body):
            statement = body[index]
            index += 1
            entry = self._pending.pop(id(statement), None)
            if entry is None:
                new_body.append(statement)
                continue
            original, finding = entry
            following = body[index] if index < len(body) else None
            assert finding.plan is not None  # the targets are the findings with a plan (_select)
            try:
                statements, consumed = rewrite_statement(
                    self, original, statement, finding.plan, following
                )
            except Decline as reason:
                self.declined(finding, str(reason))
                new_body.append(statement)
                continue
            self._fixed(finding)
            new_body += statements
            index += int(consumed)
        return updated_node.with_changes(body=new_body)

    def _with_frame_guards(
        self, original: Sequence[cst.BaseStatement], updated: Sequence[cst.BaseStatement]
    ) -> List[cst.BaseStatement]:
        """``updated``, with a call of ``_graphmend_eager_frame()`` before each statement where
        a fix of this run keeps a break (``FrameGuard``)."""
        body: List[cst.BaseStatement] = []
        for before, statement in zip(original, updated):
            start = self.position(before).start
            if (start.line, start.column) in self._frame_guards:
                body.append(self.statement(f"{self._eager_frame}()"))
            body.append(statement)
        return body

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._function_names.append(names_in(node))

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        self._function_names.pop()
        return updated_node

    # ------------------------------------------------------------------ helpers and names
    @property
    def helpers(self) -> HelperSet:
        assert self._helpers is not None, "helpers exist only while a module is transformed"
        return self._helpers

    def helper(self, name: str) -> str:
        """Request a fixed helper by name."""
        try:
            return self.helpers.fixed(name)
        except HelperNameTaken as error:
            raise Decline(str(error)) from None

    def deferred_helper(
        self, base: str, parameters: Sequence[str], body: str, shared: bool = True
    ) -> str:
        """The name of a registered helper ``(parameters)`` running ``body`` (see
        ``HelperSet.deferred``)."""
        try:
            return self.helpers.deferred(base, parameters, body, shared)
        except HelperNameTaken as error:
            raise Decline(str(error)) from None

    def fresh_name(self, base: str) -> str:
        """A name not used in the enclosing function (and reserved from now on)."""
        names = self._function_names[-1] if self._function_names else set()
        name, number = base, 1
        while name in names:
            number += 1
            name = f"{base}_{number}"
        names.add(name)
        return name

    # ------------------------------------------------------------------ emitted code
    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    def statement(self, text: str) -> cst.BaseStatement:
        """Parse one emitted statement with the module's own parser settings."""
        return cst.parse_statement(
            text + self.module.default_newline, config=self.module.config_for_parsing
        )

    def indentation(self, node: cst.CSTNode) -> str:
        """The whitespace before ``node`` (an original statement) on its first line."""
        position = self.position(node).start
        return self._lines[position.line - 1][: position.column]

    def line_indentation(self, node: cst.CSTNode) -> str:
        """The whitespace at the start of the line where ``node`` (an original node, perhaps
        inside an expression that spans lines) starts."""
        line = self._lines[self.position(node).start.line - 1]
        return line[: len(line) - len(line.lstrip())]

    @property
    def line_length(self) -> int:
        """The longest line the rewrites write: the file's own longest, within bounds."""
        return self._line_length

    def call_text(self, prefix: str, function: str, arguments: Sequence[str], indent: str) -> str:
        """``prefix + function(arguments)`` at ``indent``; one argument a line when too long
        (``split_call_text``)."""
        one_line = f"{prefix}{function}({', '.join(arguments)})"
        if len(indent) + len(one_line) <= self.line_length and "\n" not in one_line:
            return one_line
        return self.split_call_text(prefix, function, arguments)

    def split_call_text(self, prefix: str, function: str, arguments: Sequence[str]) -> str:
        """``prefix + function(`` then one argument a line, then ``)``.

        Continuation lines are indented relative to the statement: libcst adds the block's own
        indentation when it renders the statement in place.
        """
        unit = self.module.default_indent
        lines = [f"{prefix}{function}("]
        lines += [f"{unit}{shifted(argument, unit)}," for argument in arguments]
        return self.module.default_newline.join([*lines, ")"])

    def fits(self, statement: cst.CSTNode, original: cst.CSTNode) -> bool:
        """Whether ``statement``, written in place of the statement ``original``, has no line
        longer than ``line_length``."""
        indent = self.indentation(original)
        return all(
            len(indent) + len(line) <= self.line_length
            for line in self.code(statement).splitlines()
        )

    def condition_text(self, condition: cst.BaseExpression, prefix: str, indent: str) -> str:
        """``prefix + condition``, an outermost ``torch.logical_*`` call split when too long."""
        function = self.code(condition.func) if isinstance(condition, cst.Call) else ""
        if isinstance(condition, cst.Call) and function.startswith("torch.logical_"):
            arguments = [self.code(argument.value) for argument in condition.args]
            return self.call_text(prefix, function, arguments, indent)
        return prefix + self.code(condition)

    # ------------------------------------------------------------------ branches
    @staticmethod
    def branch(block: cst.BaseSuite) -> Branch:
        """The statements of an ``if`` branch, one per line as the plan says."""
        if isinstance(block, cst.SimpleStatementSuite):
            return [(small, None) for small in block.body]
        statements: Branch = []
        for line in expect(block, cst.IndentedBlock, "a branch").body:
            line = expect(line, cst.SimpleStatementLine, "a branch statement")
            if len(line.body) != 1:
                raise PlanMismatch("a branch line")
            statements.append((line.body[0], line))
        return statements

    @staticmethod
    def as_line(
        small: cst.BaseSmallStatement, line: Optional[cst.SimpleStatementLine]
    ) -> cst.BaseStatement:
        """A statement kept by a rewrite: its own line when it had one, else a new line."""
        if line is not None:
            return line
        return cst.SimpleStatementLine(
            body=[small.with_changes(semicolon=cst.MaybeSentinel.DEFAULT)]
        )

    @staticmethod
    def indented(body: cst.BaseSuite) -> cst.IndentedBlock:
        """``body`` as an indented block (a one-line suite keeps its trailing comment)."""
        if isinstance(body, cst.IndentedBlock):
            return body
        assert isinstance(body, cst.SimpleStatementSuite)
        return cst.IndentedBlock(body=[], header=body.trailing_whitespace)


def names_in(node: cst.CSTNode) -> Set[str]:
    """Every identifier in ``node``."""
    names: Set[str] = set()

    class Names(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            names.add(name.value)

    node.visit(Names())
    return names


def shifted(text: str, unit: str) -> str:
    """``text`` with its continuation lines indented by ``unit`` more (it becomes an argument
    on a line of its own), unless a string or f-string spans lines (its value would change)."""
    if "\n" not in text or literal_spans_lines(text):
        return text
    return re.sub(r"\n(?=[^\r\n])", "\n" + unit, text)


def literal_spans_lines(text: str) -> bool:
    """Whether a token of the expression ``text`` spans lines: a triple-quoted string or one
    continued with a backslash, whose line breaks and indentation are part of its value (so
    are those of text that does not tokenize)."""
    if "\n" not in text:
        return False
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return True
    newlines = (tokenize.NL, tokenize.NEWLINE)
    return any(token.type not in newlines and "\n" in token.string for token in tokens)


# ---------------------------------------------------------------------- conditions
def conjuncts(test: cst.BaseExpression) -> List[cst.BaseExpression]:
    """The operands of the ``and`` chain of an ``if`` test, as ast sees them.

    Parentheses around the whole test are transparent; a parenthesized group inside stays whole.
    """
    if isinstance(test, cst.BooleanOperation) and test.lpar:
        test = test.with_changes(lpar=[], rpar=[])
    operands: List[cst.BaseExpression] = []
    while (
        isinstance(test, cst.BooleanOperation)
        and isinstance(test.operator, cst.And)
        and not test.lpar
    ):
        operands.insert(0, test.right)
        test = test.left
    return [test] + operands


def with_static_prefix(node: cst.If, count: int) -> cst.If:
    """``node`` testing only the first ``count`` operands of its ``and`` chain."""
    test = (
        node.test.with_changes(lpar=[], rpar=[])
        if isinstance(node.test, cst.BooleanOperation)
        else node.test
    )
    for _ in range(len(conjuncts(node.test)) - count):
        assert isinstance(test, cst.BooleanOperation)
        test = test.left
    if isinstance(test, cst.BooleanOperation) and node.test.lpar:
        # the kept `and` may span lines, which is valid only inside the original parentheses
        test = test.with_changes(lpar=node.test.lpar, rpar=node.test.rpar)
    space = node.whitespace_before_test
    if not getattr(test, "lpar", None) and not space.value:
        space = cst.SimpleWhitespace(" ")
    return node.with_changes(test=test, whitespace_before_test=space)


def tensor_condition(test: cst.BaseExpression, static_count: int) -> cst.BaseExpression:
    """The lowered tensor part of ``test``: the operands after the first ``static_count``."""
    operands = conjuncts(test)[static_count:]
    if not operands:
        raise PlanMismatch("the test")
    condition = lowered(operands[0])
    for operand in operands[1:]:
        condition = _torch_call("logical_and", condition, lowered(operand))
    return condition


def lowered(node: cst.BaseExpression) -> cst.BaseExpression:
    """``and``/``or``/``not`` of tensor operands as ``torch.logical_and/or/not`` calls."""
    if isinstance(node, cst.BooleanOperation):
        name = "logical_and" if isinstance(node.operator, cst.And) else "logical_or"
        return _torch_call(name, lowered(node.left), lowered(node.right))
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
        return _torch_call("logical_not", lowered(node.expression))
    return node


def _torch_call(name: str, *arguments: cst.BaseExpression) -> cst.Call:
    return cst.Call(
        func=cst.Attribute(value=cst.Name("torch"), attr=cst.Name(name)),
        args=[cst.Arg(value=_unparenthesized(argument)) for argument in arguments],
    )


def _unparenthesized(node: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(node, (cst.Tuple, cst.GeneratorExp)) or not getattr(node, "lpar", None):
        return node
    return node.with_changes(lpar=[], rpar=[])


def _item_call(command: GraphMendCommand, side: cst.BaseExpression) -> Optional[cst.Call]:
    """``_graphmend_item(<reduction>)`` for ``side`` when it is ``<reduction>.item()``."""
    if (
        isinstance(side, cst.Call)
        and isinstance(side.func, cst.Attribute)
        and side.func.attr.value == "item"
        and not side.args
    ):
        return cst.Call(
            func=cst.Name(command.helper(ITEM)),
            args=[cst.Arg(value=side.func.value)],
            lpar=side.lpar,
            rpar=side.rpar,
        )
    return None


def item_kept(command: GraphMendCommand, test: cst.BaseExpression) -> cst.BaseExpression:
    """``test``, a comparison of ``<reduction>.item()`` or that call alone, with the number
    kept a tensor: ``_graphmend_item(<reduction>)`` in place of the ``.item()`` call."""
    if isinstance(test, cst.Call):
        kept = _item_call(command, test)
        if kept is None:
            raise PlanMismatch("the `.item()` call")
        return kept
    comparison = expect(test, cst.Comparison, "the `.item()` comparison")
    kept = _item_call(command, comparison.left)
    if kept is not None:
        return comparison.with_changes(left=kept)
    target = comparison.comparisons[0]
    kept = _item_call(command, target.comparator)
    if kept is not None:
        return comparison.with_changes(comparisons=[target.with_changes(comparator=kept)])
    raise PlanMismatch("the `.item()` call")


def comment_lines(nodes: Sequence[cst.CSTNode]) -> List[cst.EmptyLine]:
    """Statement-level comments of code a rewrite removes, as lines to keep above the new code.

    ``nodes`` are removed statements, blocks and ``else`` clauses. Comments inside expressions
    are not collected: the rewrite reuses the expressions, comments included.
    """
    found: List[cst.EmptyLine] = []
    for node in nodes:
        lines: List[cst.EmptyLine] = list(getattr(node, "leading_lines", ()))
        trailing: List[cst.TrailingWhitespace] = []
        if isinstance(node, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            trailing = [node.trailing_whitespace]
        elif isinstance(node, cst.IndentedBlock):
            trailing = [node.header]
            lines += node.footer
        elif isinstance(node, cst.Else):
            found += comment_lines([node.body])
        found += [
            cst.EmptyLine(indent=True, comment=line.comment) for line in lines if line.comment
        ]
        found += [cst.EmptyLine(indent=True, comment=t.comment) for t in trailing if t.comment]
    return found
